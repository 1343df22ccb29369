"""Recurrent rows beyond one slot per request, as the engine allocates them (§8).

The planner sizes a ``"state"`` pool at one slot per request; the engine keeps more:
- reserved rows in that pool: one slot shared by the CUDA-graph padding dummies, and one more
  for the attention-DP dummy when attention-DP is on;
- under speculative decoding (T = K + 1 tokens a step), ``"state/spec"``: one row per request
  of T intermediate conv windows and, on the default path, T intermediate SSM states;
- on the replay path, ``"state/replay"``: per state slot (reserved rows included) a
  double-buffered history of max(16, T) steps of x, B, dt and dA_cumsum.
Only layers given by their dimensions have intermediate states (the raw ``state_bytes`` form
says nothing about the split between conv and SSM state).
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from kvgen.runtime._kinds import State
from kvgen.runtime._pools import CacheManager, Pool
from kvgen.runtime._tables import SpeculativeProfile

__all__ = ["MAMBA_STATE_UPDATES", "MIN_REPLAY_HISTORY", "StateRows", "state_rows"]

MAMBA_STATE_UPDATES = ("default", "replay")
MIN_REPLAY_HISTORY = 16  # the replay kernels pad the token dimension to a tile of 16


class StateRows(NamedTuple):
    """A manager's recurrent rows beyond one per request."""

    reserved: int  # extra slots of the "state" pool
    pools: dict[str, tuple[int, int]]  # extra pool name -> (rows, bytes per row)
    slot_bytes: int = 0  # one slot of the "state" pool: every recurrent layer's state

    @property
    def extra_bytes(self) -> int:
        """Bytes of the reserved slots and of the extra pools: fixed, whatever T is."""
        rows = sum(rows * row for rows, row in self.pools.values())
        return self.reserved * self.slot_bytes + rows

    def build(self, manager: CacheManager, device: torch.device) -> None:
        """Allocate the extra pools beside the manager's own (never handed out per request:
        the engine indexes them by batch slot)."""
        for name, (rows, row) in self.pools.items():
            manager.pools[name] = Pool(manager.name, name, State.label, rows, row, device)


def state_rows(
    manager: CacheManager,
    batch: int,
    profile: SpeculativeProfile,
    *,
    attention_dp: bool,
    update: str,
) -> StateRows:
    """The rows the engine keeps beyond one per request for ``manager``'s recurrent layers."""
    state = [layer for layer in manager.layers if layer.state_bytes]
    if not state:
        return StateRows(0, {})
    reserved = 1 + attention_dp
    slot = sum(layer.state_bytes for layer in state)
    if profile.mode == "none":
        return StateRows(reserved, {}, slot)
    step = 1 + (profile.tree_draft_tokens or profile.max_draft_len)  # T = K + 1
    conv = sum(layer.mamba[0] for layer in state)
    ssm = sum(layer.mamba[1] for layer in state)
    pools: dict[str, tuple[int, int]] = {}
    if update == "replay":
        history = max(MIN_REPLAY_HISTORY, step)
        if conv:
            pools["state/spec"] = (batch, step * conv)
        replay = sum(2 * history * layer.mamba[2] for layer in state)
        if replay:
            pools["state/replay"] = (batch + reserved, replay)
    elif conv + ssm:
        pools["state/spec"] = (batch, step * (conv + ssm))
    return StateRows(reserved, pools, slot)
