"""NegT2IBench tests, one folder per package (tests/evaluator/test_rules.py tests evaluator/rules.py); shared builders in tests/helpers/."""
