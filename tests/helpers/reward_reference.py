"""reward-server's GenEval reward and Flow-GRPO's client, transcribed for the parity tests (both MIT).

- yifan123/reward-server@92ac29f, `reward_server/gen_eval.py`: the selection of `evaluate_image`
  (:274-289, with `compute_iou` :109-116), `relative_position` (:119-136), `evaluate` (:139-199),
  `evaluate_reward` (:201-264) and `compute_geneval` (:320-340), line for line; only
  `color_classification` (:88-106, CLIP) is replaced by each detection's colour as the scene gives
  it, and the detector's output is the scene's boxes (mmdet's per-class float32 arrays of x0, y0,
  x1, y1, score, :270).
- yifan123/flow_grpo@ac4c86e, `flow_grpo/rewards.py`: `geneval_score` (:160-229), the client that
  posts to the server; only the URL is a parameter (the one line a user changes).
- X-GenGroup/Flow-Factory@a0b2bc5 (Apache-2.0), `src/flow_factory/rewards/my_reward_remote.py`:
  `_image_to_b64` (:55-63), `_video_to_b64` (:66-71), `_build_payload` (:74-94) and `RemoteRewardClient`
  (:97-143), the request code of its `RemotePointwiseRewardModel`, line for line (its logger calls left
  out).

Nothing here imports the project: the expected values come from this code, not from ours.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

THRESHOLD = 0.3  # gen_eval.py:312-316
COUNTING_THRESHOLD = 0.9
MAX_OBJECTS = 16
NMS_THRESHOLD = 1.0
POSITION_THRESHOLD = 0.1
COLORS = ["red", "orange", "yellow", "green", "blue", "purple", "pink", "brown", "black", "white"]  # :59
REQUIRED_KEYS = ["single_object", "two_object", "counting", "colors", "position", "color_attr"]  # :321


def compute_iou(box_a, box_b):  # gen_eval.py:109-116
    def area_fn(box):
        return max(box[2] - box[0] + 1, 0) * max(box[3] - box[1] + 1, 0)

    i_area = area_fn(
        [max(box_a[0], box_b[0]), max(box_a[1], box_b[1]), min(box_a[2], box_b[2]), min(box_a[3], box_b[3])]
    )
    u_area = area_fn(box_a) + area_fn(box_b) - i_area
    return i_area / u_area if u_area else 0


def relative_position(obj_a, obj_b):  # gen_eval.py:119-136
    boxes = np.array([obj_a[0], obj_b[0]])[:, :4].reshape(2, 2, 2)
    center_a, center_b = boxes.mean(axis=-2)
    dim_a, dim_b = np.abs(np.diff(boxes, axis=-2))[..., 0, :]
    offset = center_a - center_b
    revised_offset = np.maximum(np.abs(offset) - POSITION_THRESHOLD * (dim_a + dim_b), 0) * np.sign(offset)
    if np.all(np.abs(revised_offset) < 1e-3):
        return set()
    dx, dy = revised_offset / np.linalg.norm(offset)
    relations = set()
    if dx < -0.5:
        relations.add("left of")
    if dx > 0.5:
        relations.add("right of")
    if dy < -0.5:
        relations.add("above")
    if dy > 0.5:
        relations.add("below")
    return relations


def evaluate(colour_of, objects, metadata):  # gen_eval.py:139-199 (`image` → the colour lookup)
    correct = True
    matched_groups = []
    for req in metadata.get("include", []):
        classname = req["class"]
        matched = True
        found_objects = objects.get(classname, [])[: req["count"]]
        if len(found_objects) < req["count"]:
            correct = matched = False
        else:
            if "color" in req:
                colors = [colour_of(classname, obj) for obj in found_objects]
                if colors.count(req["color"]) < req["count"]:
                    correct = matched = False
            if "position" in req and matched:
                expected_rel, target_group = req["position"]
                if matched_groups[target_group] is None:
                    correct = matched = False
                else:
                    for obj in found_objects:
                        for target_obj in matched_groups[target_group]:
                            true_rels = relative_position(obj, target_obj)
                            if expected_rel not in true_rels:
                                correct = matched = False
                                break
                        if not matched:
                            break
        if matched:
            matched_groups.append(found_objects)
        else:
            matched_groups.append(None)
    for req in metadata.get("exclude", []):
        classname = req["class"]
        if len(objects.get(classname, [])) >= req["count"]:
            correct = False
    return correct


def evaluate_reward(colour_of, objects, metadata):  # gen_eval.py:201-264
    correct = True
    rewards = []
    matched_groups = []
    for req in metadata.get("include", []):
        classname = req["class"]
        matched = True
        found_objects = objects.get(classname, [])
        rewards.append(1 - abs(req["count"] - len(found_objects)) / req["count"])
        if len(found_objects) != req["count"]:
            correct = matched = False
            if "color" in req or "position" in req:
                rewards.append(0.0)
        else:
            if "color" in req:
                colors = [colour_of(classname, obj) for obj in found_objects]
                rewards.append(1 - abs(req["count"] - colors.count(req["color"])) / req["count"])
                if colors.count(req["color"]) != req["count"]:
                    correct = matched = False
            if "position" in req and matched:
                expected_rel, target_group = req["position"]
                if matched_groups[target_group] is None:
                    correct = matched = False
                    rewards.append(0.0)
                else:
                    for obj in found_objects:
                        for target_obj in matched_groups[target_group]:
                            true_rels = relative_position(obj, target_obj)
                            if expected_rel not in true_rels:
                                correct = matched = False
                                rewards.append(0.0)
                                break
                        if not matched:
                            break
                    rewards.append(1.0)
        if matched:
            matched_groups.append(found_objects)
        else:
            matched_groups.append(None)
    reward = sum(rewards) / len(rewards) if rewards else 0
    return correct, reward


def select(bbox: dict[str, np.ndarray], metadata) -> dict:  # gen_eval.py:274-289 (class name → its array)
    detected = {}
    confidence_threshold = THRESHOLD if metadata["tag"] != "counting" else COUNTING_THRESHOLD
    for classname, rows in bbox.items():
        ordering = np.argsort(rows[:, 4])[::-1]
        ordering = ordering[rows[ordering, 4] > confidence_threshold]
        ordering = ordering[:MAX_OBJECTS].tolist()
        detected[classname] = []
        while ordering:
            max_obj = ordering.pop(0)
            detected[classname].append((rows[max_obj], None))
            ordering = [
                obj for obj in ordering if NMS_THRESHOLD == 1 or compute_iou(rows[max_obj], rows[obj]) < NMS_THRESHOLD
            ]
        if not detected[classname]:
            del detected[classname]
    return detected


def compute_geneval(scenes, only_strict=False):  # gen_eval.py:291-309 and :320-340
    """SCENES: (metadata, class → float32 (n, 5) array, colour_of) per image; the five lists/dicts."""
    scores, strict_rewards, rewards = [], [], []
    grouped_strict_rewards, grouped_rewards = defaultdict(list), defaultdict(list)
    for metadata, bbox, colour_of in scenes:
        detected = select(bbox, metadata)
        is_strict_correct, score = evaluate_reward(colour_of, detected, metadata)
        is_correct = False if only_strict else evaluate(colour_of, detected, metadata)
        strict_rewards.append(1.0 if is_strict_correct else 0.0)
        scores.append(score)
        rewards.append(1.0 if is_correct else 0.0)
        tag = metadata["tag"]
        for key in REQUIRED_KEYS:
            if key != tag:
                grouped_strict_rewards[key].append(-10.0)
                grouped_rewards[key].append(-10.0)
            else:
                grouped_strict_rewards[tag].append(1.0 if is_strict_correct else 0.0)
                grouped_rewards[tag].append(1.0 if is_correct else 0.0)
    return scores, rewards, strict_rewards, dict(grouped_rewards), dict(grouped_strict_rewards)


def geneval_score(url: str):  # flow_grpo/rewards.py:160-229, the URL made a parameter
    """Flow-GRPO's client as its source has it: JPEG-encode, pickle, POST in batches of 64, retry on 500."""
    import pickle
    from io import BytesIO

    import requests
    import torch
    from PIL import Image
    from requests.adapters import HTTPAdapter, Retry

    batch_size = 64
    sess = requests.Session()
    retries = Retry(total=1000, backoff_factor=1, status_forcelist=[500], allowed_methods=False)
    sess.mount("http://", HTTPAdapter(max_retries=retries))

    def _fn(images, prompts, metadatas, only_strict):
        del prompts
        if isinstance(images, torch.Tensor):
            images = (images * 255).round().clamp(0, 255).to(torch.uint8).cpu().numpy()
            images = images.transpose(0, 2, 3, 1)  # NCHW -> NHWC
        images_batched = np.array_split(images, np.ceil(len(images) / batch_size))
        metadatas_batched = np.array_split(metadatas, np.ceil(len(metadatas) / batch_size))
        all_scores = []
        all_rewards = []
        all_strict_rewards = []
        all_group_strict_rewards = []
        all_group_rewards = []
        for image_batch, metadata_batched in zip(images_batched, metadatas_batched, strict=False):
            jpeg_images = []
            for image in image_batch:
                img = Image.fromarray(image)
                buffer = BytesIO()
                img.save(buffer, format="JPEG")
                jpeg_images.append(buffer.getvalue())
            data = {"images": jpeg_images, "meta_datas": list(metadata_batched), "only_strict": only_strict}
            data_bytes = pickle.dumps(data)
            response = sess.post(url, data=data_bytes, timeout=120)
            response_data = pickle.loads(response.content)
            all_scores += response_data["scores"]
            all_rewards += response_data["rewards"]
            all_strict_rewards += response_data["strict_rewards"]
            all_group_strict_rewards.append(response_data["group_strict_rewards"])
            all_group_rewards.append(response_data["group_rewards"])
        all_group_strict_rewards_dict = defaultdict(list)
        all_group_rewards_dict = defaultdict(list)
        for current_dict in all_group_strict_rewards:
            for key, value in current_dict.items():
                all_group_strict_rewards_dict[key].extend(value)
        all_group_strict_rewards_dict = dict(all_group_strict_rewards_dict)
        for current_dict in all_group_rewards:
            for key, value in current_dict.items():
                all_group_rewards_dict[key].extend(value)
        all_group_rewards_dict = dict(all_group_rewards_dict)
        return all_scores, all_rewards, all_strict_rewards, all_group_rewards_dict, all_group_strict_rewards_dict

    return _fn


def _image_to_b64(img):  # my_reward_remote.py:55-63
    """Convert PIL Image or Tensor to base64 string."""
    import base64
    import io

    import torch
    from PIL import Image

    if isinstance(img, torch.Tensor):
        # (C, H, W) in [0, 1] -> PIL
        arr = (img.clamp(0, 1).permute(1, 2, 0).cpu().numpy() * 255).astype("uint8")
        img = Image.fromarray(arr)
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return base64.b64encode(buf.getvalue()).decode()


def _video_to_b64(video):  # my_reward_remote.py:66-71
    """Convert video frames to list of base64 strings."""
    import torch

    if isinstance(video, torch.Tensor):
        # (T, C, H, W) -> list of frames
        return [_image_to_b64(frame) for frame in video]
    return [_image_to_b64(frame) for frame in video]


def _build_payload(prompt, image=None, video=None, condition_images=None, condition_videos=None):  # :74-94
    """Build JSON-serializable request payload."""
    return {
        "prompt": prompt,
        "image": [_image_to_b64(img) for img in image] if image else None,
        "video": [_video_to_b64(v) for v in video] if video else None,
        "condition_images": [[_image_to_b64(img) for img in imgs] for imgs in condition_images]
        if condition_images
        else None,
        "condition_videos": [[_video_to_b64(v) for v in vs] for vs in condition_videos] if condition_videos else None,
    }


class RemoteRewardClient:  # my_reward_remote.py:97-143
    """HTTP client for communicating with a Reward Server."""

    def __init__(self, server_url: str, timeout: float = 60.0, retries: int = 3):
        import requests

        self.url = server_url.rstrip("/")
        self.timeout = timeout
        self.retries = retries
        self._session = requests.Session()

    def health_check(self) -> bool:
        """Check server availability."""
        try:
            r = self._session.get(f"{self.url}/health", timeout=5.0)
            return r.ok
        except Exception:  # noqa: BLE001 - as the source (it logs a warning)
            return False

    def compute(self, prompt, image=None, video=None, condition_images=None, condition_videos=None):
        """Send compute request and return rewards."""
        import requests

        payload = _build_payload(prompt, image, video, condition_images, condition_videos)

        for attempt in range(self.retries):
            try:
                r = self._session.post(f"{self.url}/compute", json=payload, timeout=self.timeout)
                r.raise_for_status()
                data = r.json()
                if data.get("error"):
                    raise RuntimeError(f"Server error: {data['error']}")
                return data["rewards"]
            except requests.RequestException as e:
                if attempt == self.retries - 1:
                    raise RuntimeError(f"Failed to connect to {self.url}: {e}") from e

        raise RuntimeError("Unreachable")
