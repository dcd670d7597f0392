"""Short text forms of keys, kernels and chains, for trace.md and summary.md (their templates call these)."""

from __future__ import annotations

from workshop.i18n import _
from workshop.labs.dispatcher import reimpl

LAB_KEYS = ("CPU", "CUDA")  # keys of other backends are summarized, not listed
MAX_SHOWN = 7  # the recorder's handler excludes every key above Python: trace.json has them all


def rank_or_zero(key: str) -> tuple[int, int]:
    try:
        return reimpl.rank(key)
    except KeyError:
        return (0, 0)


def short_keys(key_names: list[str]) -> str:
    """Key names, highest priority first, with other backends' Autocast keys and functorch keys counted."""
    chosen = (
        k
        for k in key_names
        if not (k.startswith("FuncTorch") or (k.startswith("Autocast") and k[8:] not in LAB_KEYS))
    )
    shown = sorted(chosen, key=rank_or_zero, reverse=True)[:MAX_SHOWN]
    hidden = len(key_names) - len(shown)
    more = " " + _("+{n} more").format(n=hidden) if hidden else ""
    return ", ".join(shown) + more or "-"


def chain_text(node: dict) -> str:
    """'PythonTLSSnapshot → **AutogradCPU**: math kernel `RegisterCompositeImplicitAutograd_0.cpp`'."""
    steps = [s for s in node["chain"] if s["key"]]
    if not steps:
        return "-"
    walked = " → ".join(s["key"] if s["passes_on"] else f"**{s['key']}**" for s in steps)
    kernel = steps[-1]["kernel"]
    return f"{walked}: " + (
        _("(none)") if kernel is None else f"{kernel['tag']} `{kernel['source']}`"
    )


def top_ops(node: dict) -> list[str]:
    """The first ops to reach the Python key: the root itself, or the calls its kernels above Python made."""
    calls = [node] if node["arrived_at_python"] else node["children"]
    return [c["op"] for c in calls]


def code_list(items) -> str:
    """'`aten::view`, `aten::t`': names as inline code, comma separated."""
    return ", ".join(f"`{i}`" for i in items)
