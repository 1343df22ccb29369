"""The command line: the parser and dispatch (``main``), one module per command (``commands``),
shell completion scripts and the codes' documentation table that ``kvgen explain`` reads.
"""
