"""KV4xx: what ``kvgen diff`` refuses to compare (declared here, emitted by ``kvgen._review``)."""

from __future__ import annotations

from kvgen._util.codes._registry import declare

SYMLINKED_SPEC = declare(
    "KV401",
    "symlinked-spec",
    fix="commit the spec itself (a regular file) in place of the link",
    doc="""A spec, or a folder on its path, is a symlink at the ref or in the working tree.

## What it does
`kvgen diff` compares each spec path at the git ref with the same path in the working tree,
entry by entry and without following links. A symlink at either side, for the spec file itself
or for a folder above it (`schema/families -> elsewhere`), is reported at that path (prefixed
with the ref for the old side) and nothing is compared.

## Why it matters
A link makes the two sides disagree about what the path is. Followed, a spec replaced by a link
to `../v2/real.yaml` holding the same family at an eighth of the capacity was reported as a new
family, and a link to `/dev/null` made a family vanish without being "removed": both passed the
capacity gate with exit 0. Refusing links keeps every change visible as a change of a file.

## Example
```
schema/families/gemma3.yaml -> ../v2/gemma3.yaml
```

## Fix
Replace the link with the spec itself (`cp --remove-destination` the target over it), so that
the pull request shows the spec's own diff.
""",
)

IRREGULAR_SPEC = declare(
    "KV402",
    "irregular-spec-entry",
    fix="keep only regular spec files under the spec directory",
    doc="""A spec path is not a regular file: a submodule, a folder, a device, a FIFO or a socket.

## What it does
Reports, at the ref (git mode 160000, a submodule "gitlink", or a tree) or in the working tree
(a folder, device, FIFO or socket), an entry named like a spec (`*.yaml`, `*.yml`) that is not a
regular file, and any such entry named on the command line. Nothing is compared.

## Why it matters
Only a regular file has contents both sides agree on; anything else would be read as nothing (a
family silently gone), as a commit id, or could block the reader (a FIFO).

## Example
```
git submodule add https://example.com/specs schema/families/extra.yaml
```

## Fix
Keep only regular spec files in the spec directory; move other entries elsewhere.
""",
)

STALE_OUTPUT = declare(
    "KV403",
    "stale-abandoned-output",
    fix="delete the old output folder, or run `kvgen generate --out` on it",
    doc="""The output folder the ref configured still holds generated code the specs do not make.

## What it does
When the working tree's `[tool.kvgen] out` names another folder than the configuration at the
ref, `kvgen diff` checks the ref's output folder in the working tree, if it is still there: each
file that differs from what this kvgen generates from the specs, that is missing, or that carries
kvgen's header without a spec behind it is reported at its path.

## Why it matters
Consumers import the generated modules from where they have always been. A pull request could
hand-edit `generated/<family>/sizing.py` (a changed number, or code that runs on import) and
point `out` at a freshly generated folder: `kvgen generate --check` then checks only the new
folder, and the edited module, which nobody generated from a reviewed spec, would pass review.

## Example
```toml
[tool.kvgen]
out = "generated2"   # at the ref: "generated", still committed and hand-edited
```

## Fix
Delete the old output folder in the same pull request (consumers then fail loudly until they
import from the new place), or regenerate it with `kvgen generate --out <old folder>`.
""",
)
