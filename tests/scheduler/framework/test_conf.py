"""The configuration loader: Volcano's format, defaults and rejections."""

from __future__ import annotations

from pathlib import Path

import pytest

from lahar.scheduler.framework.conf import ConfigError, default_conf, load_conf, parse_conf

FIXTURES = Path(__file__).parent.parent / "fixtures"


def test_builtin_default_is_volcanos() -> None:
    conf = default_conf()
    assert conf.actions == ["enqueue", "allocate", "backfill"]
    assert [[p.name for p in t.plugins] for t in conf.tiers] == [
        ["priority", "gang", "conformance"],
        ["overcommit", "drf", "predicates", "proportion", "nodeorder"],
    ]


def test_unset_flags_default_true_except_hierarchy_and_cluster_order() -> None:
    option = default_conf().tiers[0].plugins[1]
    assert option.enabled("enablePreemptable")
    assert option.enabled("enableJobStarving")
    assert not option.enabled("enableHierarchy")
    assert not option.enabled("enabledClusterOrder")


def test_helm_and_ci_files_load_unchanged() -> None:
    helm = load_conf(str(FIXTURES / "volcano-scheduler-helm.conf"))
    gang = helm.tiers[0].plugins[1]
    assert gang.name == "gang" and not gang.enabled("enablePreemptable")
    assert helm.plugin_names()[-1] == "binpack"
    ci = load_conf(str(FIXTURES / "volcano-scheduler-ci.conf"))
    assert ci.actions == ["enqueue", "allocate", "backfill", "reclaim", "preempt"]
    assert ci.action_arguments("preempt") == {"enableTopologyAwarePreemption": False}
    assert ci.tiers[0].plugins[3].arguments == {"sla-waiting-time": "1h"}


def test_shipped_manifest_loads_if_present() -> None:
    path = Path(__file__).parents[3] / "src/lahar/manifests/volcano-scheduler.conf"
    if not path.exists():
        pytest.skip("manifest not written yet")
    load_conf(str(path))


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('actions: "enqueue, bogus"\ntiers: []', "unknown action 'bogus'"),
        ('actions: "allocate"\ntiers:\n- plugins:\n  - name: nope', "unknown plugin 'nope'"),
        (
            'actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n    enableJobReady: maybe',
            "enableJobReady",
        ),
        (
            'actions: "allocate"\ntiers:\n- plugins:\n  - name: drf\n    enableHierarchy: true\n'
            "  - name: proportion",
            "cannot share a tier",
        ),
        ("[1, 2", "not valid YAML"),
        ("actions: [allocate]", "comma-separated"),
    ],
)
def test_rejections_name_the_field(text: str, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        parse_conf(text, source="conf")


def test_flags_accept_strings_and_arguments_are_kept() -> None:
    conf = parse_conf(
        'actions: "allocate"\ntiers:\n- plugins:\n  - name: overcommit\n'
        '    enableJobEnqueued: "false"\n    arguments:\n      overcommit-factor: 2.0\n'
    )
    option = conf.tiers[0].plugins[0]
    assert not option.enabled("enableJobEnqueued")
    assert option.arguments == {"overcommit-factor": 2.0}
