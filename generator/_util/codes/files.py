"""KV020-KV024: how kvgen touches the working tree (``kvgen._util.files``), declared once here.

Every file kvgen reads or writes goes through ``kvgen._util.files``; these are its refusals. They
are reader codes (KV0xx): a refused file is never parsed, and nothing is written.
"""

from __future__ import annotations

from kvgen._util.codes._registry import declare

SYMBOLIC_LINK = declare(
    "KV020",
    "symbolic-link",
    fix="replace the link by a regular file (or a real folder) with the content you mean",
    doc="""A path kvgen reads or writes is, or passes through, a symbolic link.

## What it does
Refuses a spec, config, committed generated file, output directory or any folder on the way
to one (below the project root) that is a symbolic link. The link is never followed: its
target is neither read nor written.

## Why it matters
A link is a file a pull request controls that points anywhere: at `.git/config` (whose
`extraheader` line holds a CI token), at `/dev/zero`, at a spec outside the reviewed
directory, or at a folder outside the checkout that `kvgen generate` would write into.
Reviewers see a one-line change; kvgen would act on the target. Refusing every link keeps
what kvgen reads and writes equal to what the review shows.

## Example
`schema/families/v.yaml -> /dev/null`, or `generated/gemma3 -> /home/ci/.ssh`.

## Fix
Replace the link by a regular file (or a real folder) with the content you mean.
""",
)

NOT_A_REGULAR_FILE = declare(
    "KV021",
    "not-a-regular-file",
    fix="give a regular file",
    doc="""A path kvgen reads or writes is a directory, a FIFO, a device or a socket.

## What it does
Refuses anything but a regular file where kvgen reads or replaces a file, without opening it
for longer than it takes to ask (FIFOs are opened non-blocking, so a read never hangs).

## Why it matters
`/dev/zero` and `/dev/urandom` never end, a FIFO blocks forever, and replacing a device
(`--out /dev/full` as root) would turn it into a regular file.

## Example
`kvgen import-hf /dev/urandom`, `kvgen import-hf config.json --out schema/families/`.

## Fix
Name a regular file (for `--out`, a file path, not a folder).
""",
)

OUTSIDE_PROJECT = declare(
    "KV022",
    "outside-project",
    fix="name a folder inside the project, below its root",
    doc="""An output would leave the project, or would be the project root itself.

## What it does
Refuses a write whose target is not below the project root where kvgen decides the place
(`kvgen init`'s files, the configured `out`), and any output directory that is the project
root or holds it (`out = "."`, `out = ""`, `--out ..`).

## Why it matters
`kvgen generate` replaces its whole output directory by a fresh copy in one step; with the
project root as output it would swap the whole repository.

## Example
```toml
[tool.kvgen]
out = "."
```

## Fix
Use a proper sub-directory, for example `out = "generated"`.
""",
)

WRITE_FAILED = declare(
    "KV023",
    "write-failed",
    fix="free disk space or make the folder writable, then run the command again",
    doc="""A write failed: the disk is full, the folder is read-only, or permission is denied.

## What it does
Reports the file that could not be written and why (the operating system's reason). What
kvgen had staged is removed; the existing files are left as they were.

## Why it matters
A failed write must not leave half a tree or a stray staging folder behind, and it is not
a bug in kvgen: it needs a clear message, not an internal error.

## Example
`kvgen generate` on a full disk: `generated:1:1: KV023 cannot write generated/gemma3/sizing.py:
No space left on device`.

## Fix
Free disk space or make the folder writable, then run the command again.
""",
)

OVERSIZED_FILE = declare(
    "KV024",
    "oversized-file",
    fix="check that this is the file you meant",
    doc="""A file kvgen reads (a config, a committed generated file) is over its size bound.

## What it does
Reads at most the bound plus one byte, and refuses the file when there is more. Specs have
their own bound (KV008), Hugging Face configs theirs (KV308).

## Why it matters
A project file is kilobytes to a few megabytes; a file past the bound is the wrong file,
and reading it whole first would cost memory without limit.

## Example
`pyproject.toml` grown to 2 MiB, or a generated `sizing.py` replaced by a 1 GiB file.

## Fix
Check that this is the file you meant.
""",
)
