"""The CRD conformance suite's case files, as code (make_cases.py writes them)."""
