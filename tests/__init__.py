"""NegT2IBench's tests, one folder per package (tests/evaluator/test_rules.py tests evaluator/rules.py);
the builders they share are in tests/helpers/."""
