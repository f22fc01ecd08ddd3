"""Placement validation: the validator protocol (``validator``), pre-physics validators, the check
registry, the validate stage (``runner``) and its result values (``results``)."""
