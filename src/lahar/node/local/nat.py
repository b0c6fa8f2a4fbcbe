"""Outbound NAT for the pod CIDR: one masquerade rule, added and removed exactly.

Pods have private addresses on a bridge; for them to reach the outside world (Ray's
runtime_env pip installs need PyPI) their packets must leave with the host's address.
One rule does it: source in the pod CIDR, leaving by any interface but the bridge,
masquerade. With nftables the rule lives in a table of its own named after the owner
and the bridge, so removing the table removes exactly what was added; with iptables
the rule carries a comment and is deleted by its full spec. Either way `NatRule` is a
plain record that is persisted, so a restarted agent can remove what a crashed one
added.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import asdict, dataclass


def _run(argv: list[str], *, check: bool = True, stdin: str | None = None) -> str:
    proc = subprocess.run(argv, input=stdin, capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc.stdout


@dataclass(frozen=True)
class NatRule:
    """What was added: the tool, and the nft table name or the iptables rule spec."""

    tool: str  # "nft" or "iptables"
    table: str = ""  # nft: the `ip` family table that holds the rule
    spec: tuple[str, ...] = ()  # iptables: the rule spec after `-t nat -A/-D`

    def to_dict(self) -> dict[str, object]:
        return {**asdict(self), "spec": list(self.spec)}

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> NatRule:
        spec = data.get("spec") or []
        assert isinstance(spec, list)
        return cls(str(data["tool"]), str(data.get("table", "")), tuple(str(s) for s in spec))


def nft_table_name(owner_tag: str, bridge: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", f"{owner_tag}_{bridge}_nat")


def add_masquerade(tool: str, owner_tag: str, bridge: str, cidr: str) -> NatRule:
    """Add the masquerade rule for `cidr` leaving by any interface but `bridge`."""
    if tool == "nft":
        table = nft_table_name(owner_tag, bridge)
        # Replace any leftover of the same table so that this is idempotent.
        _run(["nft", "delete", "table", "ip", table], check=False)
        script = (
            f"table ip {table} {{\n"
            "  chain postrouting {\n"
            "    type nat hook postrouting priority srcnat; policy accept;\n"
            f'    ip saddr {cidr} oifname != "{bridge}" masquerade\n'
            "  }\n"
            "}\n"
        )
        _run(["nft", "-f", "-"], stdin=script)
        return NatRule("nft", table=table)
    if tool == "iptables":
        spec = (
            "POSTROUTING",
            "-s",
            cidr,
            "!",
            "-o",
            bridge,
            "-m",
            "comment",
            "--comment",
            f"{owner_tag}:{bridge}",
            "-j",
            "MASQUERADE",
        )
        exists = subprocess.run(["iptables", "-t", "nat", "-C", *spec], capture_output=True)
        if exists.returncode != 0:
            _run(["iptables", "-t", "nat", "-A", *spec])
        return NatRule("iptables", spec=spec)
    raise ValueError(f"unknown NAT tool {tool!r}")


def remove(rule: NatRule) -> None:
    """Remove exactly what `add_masquerade` added; a rule already gone is fine."""
    if rule.tool == "nft":
        _run(["nft", "delete", "table", "ip", rule.table], check=False)
    elif rule.tool == "iptables":
        while (
            subprocess.run(
                ["iptables", "-t", "nat", "-D", *rule.spec], capture_output=True
            ).returncode
            == 0
        ):
            pass


def present(rule: NatRule) -> bool:
    """Whether the rule is currently installed."""
    if rule.tool == "nft":
        return (
            subprocess.run(
                ["nft", "list", "table", "ip", rule.table], capture_output=True
            ).returncode
            == 0
        )
    return (
        subprocess.run(["iptables", "-t", "nat", "-C", *rule.spec], capture_output=True).returncode
        == 0
    )
