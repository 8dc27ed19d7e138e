"""The validator's checks, one module per kind of entry (model/validate.py runs them)."""
