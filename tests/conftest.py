"""The root conftest only loads kvgen's pytest plugin (fixtures, hypothesis profile, markers)."""

pytest_plugins = ["tests.plugin"]
