"""A spec file read and validated: the YAML composer, the pydantic models (``models``), schema
errors as positioned findings, the loader, and the bound on what generating it would write.
"""
