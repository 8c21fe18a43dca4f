"""Evaluator validation (docs/validation.md): human annotations, agreement statistics, `agree`.

- `questions`: the yes/no wording of every element of a prompt (annotation UI, VLM judges);
- `annotations`: the annotation record and the human verdict it implies;
- `labels`: three annotators' records per image → majority label and continuous human score;
- `sample`: the seeded, stratified sample of images to annotate (`annotation-sample`);
- `assignment`: which image an annotator gets next (each image to three people);
- `stats`, `interrater`, `bootstrap`: pure statistics (scikit-learn / scipy / statsmodels);
- `agreement`: human labels + evaluator results → the paper's validation tables (pure);
- `evaluators`: which evaluator and mode a results file is (a judge's modes gathered);
- `paper_tables`, `paper_breakdowns`: the paper's Tables 2, 5–7, 9–13 in its layout; `costs`:
  Table 2's cost columns from run records; `cells`: how their cells are written;
- `report`: every table as Markdown / CSV / JSON files; `probes`: optional extra sections;
- `cli`: `annotation-sample`, `annotations export|import`, `agree`.

Nothing here is imported at package import: import the module you need.
"""
