"""Janus-Pro gets its prompts in its chat format (the processor's chat template), as the model was trained."""

from __future__ import annotations

import pytest

from generation.backends import JanusGenerator, janus_chat_text, load_generator
from generation.registry import ModelSpec
from tests.helpers.generation_helpers import tiny_janus

# The shape of the Hub processor's template (DeepSeek's SFT format), small enough to read here.
JANUS_TEMPLATE = (
    "{% for message in messages %}{% if message['role'] == 'user' %}<|User|>: "
    "{% for content in message['content'] %}{{ content['text'] }}{% endfor %}{{ '\\n\\n' }}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|Assistant|>:{% endif %}"
)
PROMPT = "a photo of a red cup"


class RecordingProcessor:
    """The tiny processor, recording every text it is asked to tokenize."""

    def __init__(self, inner):
        self.inner = inner
        self.texts: list[str] = []

    def __call__(self, *, text, **kwargs):
        self.texts += list(text)
        return self.inner(text=text, **kwargs)

    def __getattr__(self, name):
        return getattr(self.inner, name)


class RecordingModel:
    """The tiny model, recording the input ids `generate` receives."""

    def __init__(self, inner):
        self.inner = inner
        self.input_ids: list[list[int]] = []

    def generate(self, **kwargs):
        self.input_ids += kwargs["input_ids"].tolist()
        return self.inner.generate(**kwargs)

    def __getattr__(self, name):
        return getattr(self.inner, name)


@pytest.fixture
def janus():
    model, processor = tiny_janus()
    return RecordingModel(model), RecordingProcessor(processor)


@pytest.mark.slow
def test_prompt_goes_through_the_chat_template(janus):
    model, processor = janus
    processor.inner.chat_template = JANUS_TEMPLATE
    generator = JanusGenerator(model, processor, "cpu")
    generator([PROMPT], [3])
    expected = "<|User|>: a photo of a red cup\n\n<|Assistant|>:"
    assert processor.texts == [expected]
    # ... and the model gets exactly that text's tokens with the begin-of-image token the processor appends.
    tokenizer = processor.inner.tokenizer
    assert model.input_ids == [tokenizer(expected + "<begin_of_image>")["input_ids"]]
    assert model.input_ids[0][-1] == tokenizer.convert_tokens_to_ids("<begin_of_image>")
    assert generator.params["prompt_format"] == "chat_template"


@pytest.mark.slow
def test_processor_without_a_template_gets_the_raw_prompt(janus):
    model, processor = janus
    assert processor.inner.chat_template is None
    generator = JanusGenerator(model, processor, "cpu")
    generator([PROMPT], [3])
    assert processor.texts == [PROMPT]
    assert janus_chat_text(processor.inner, PROMPT) == PROMPT
    assert generator.params["prompt_format"] == "raw"


def test_template_saved_with_the_processor_is_used_after_loading(tmp_path):
    model, processor = tiny_janus()
    processor.chat_template = JANUS_TEMPLATE
    folder = tmp_path / "janus"
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    spec = ModelSpec(
        key="janus_tiny",
        hub_id=str(folder),
        pipeline_class="transformers.JanusForConditionalGeneration",
        backend="janus",
        dtype="float32",
    )
    loaded = load_generator(spec, "cpu")
    assert loaded.params["prompt_format"] == "chat_template"
    assert janus_chat_text(loaded.processor, "a cup") == "<|User|>: a cup\n\n<|Assistant|>:"
