"""Lint: the semantic rules over a loaded spec (``rules``, one module per rule; a rule may read
the static model), the run over files (``linter``), ``# kvgen: noqa``, the reporters' formats
and the codes' documentation page (``codes_doc``).
"""
