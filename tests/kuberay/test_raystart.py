"""The generated ``ray start`` command (kuberay-semantics.md §1.1, §3.3)."""

from __future__ import annotations

from lahar.kuberay import raystart


def test_flags_sorted_with_spaces_and_booleans() -> None:
    params = {
        "b": "True",
        "a": "false",
        "log-color": "false",
        "include-dashboard": "TRUE",
        "x": "1",
    }
    assert raystart.render_flags(params) == (
        " --b  --include-dashboard=TRUE  --log-color=false  --x=1 "
    )


def test_head_defaults_and_no_monitor_override() -> None:
    params = {"no-monitor": "false", "block": "false"}
    raystart.default_params(params, "head", head_port="6379", head_fqdn="x", autoscaling=True)
    assert params == {
        "no-monitor": "true",
        "block": "true",
        "dashboard-host": "0.0.0.0",
        "metrics-export-port": "8080",
        "dashboard-agent-listen-port": "52365",
    }


def test_worker_address_uses_head_port_and_keeps_explicit() -> None:
    params: dict[str, str] = {}
    raystart.default_params(
        params, "worker", head_port="6380", head_fqdn="h.ns.svc.cluster.local", autoscaling=False
    )
    assert params["address"] == "h.ns.svc.cluster.local:6380"
    assert "dashboard-host" not in params
    explicit = {"address": "elsewhere:1", "metrics-export-port": "9"}
    raystart.default_params(explicit, "worker", head_port="6379", head_fqdn="h", autoscaling=False)
    assert explicit["address"] == "elsewhere:1" and explicit["metrics-export-port"] == "9"


def test_resources_from_container_round_up_and_fallbacks() -> None:
    params: dict[str, str] = {}
    container = {"resources": {"requests": {"cpu": "1500m", "memory": "1Gi"}}}
    raystart.resource_params(params, container)
    # CPU falls back to the request (rounded up); memory never falls back to the request
    assert params == {"num-cpus": "2"}
    params = {}
    raystart.resource_params(params, {"resources": {"limits": {"cpu": "500m", "memory": "1G"}}})
    assert params == {"num-cpus": "1", "memory": "1000000000"}


def test_gpu_first_sorted_nonzero_limit_and_mig() -> None:
    params: dict[str, str] = {}
    limits = {"nvidia.com/gpu": "0", "nvidia.com/mig-1g.10gb": "3", "amd.com/gpu": "1500m"}
    raystart.resource_params(params, {"resources": {"limits": limits}})
    assert params["num-gpus"] == "2"  # amd.com/gpu sorts first, 1.5 rounded up
    params = {}
    raystart.resource_params(params, {"resources": {"limits": {"nvidia.com/mig-1g.10gb": "3"}}})
    assert params["num-gpus"] == "3"


def test_accelerator_into_resources_json() -> None:
    params = {"resources": "'{\"custom\": 1}'"}
    raystart.resource_params(
        params, {"resources": {"limits": {"aws.amazon.com/neuroncore": "2", "google.com/tpu": "4"}}}
    )
    assert params["resources"] == '\'{"custom":1,"neuron_cores":2}\''
    kept = {"resources": '{"TPU": 1}'}
    raystart.resource_params(kept, {"resources": {"limits": {"google.com/tpu": "4"}}})
    assert kept["resources"] == '{"TPU": 1}'


def test_unparsable_resources_skips_accelerators_like_kuberay() -> None:
    params = {"resources": '"{\\"a\\": 1}"'}
    raystart.resource_params(
        params, {"resources": {"limits": {"nvidia.com/gpu": "1", "google.com/tpu": "4"}}}
    )
    assert "num-gpus" not in params
    assert params["resources"] == '"{\\"a\\": 1}"'


def test_group_resources_and_labels() -> None:
    params: dict[str, str] = {}
    raystart.apply_group_resources(
        params,
        {"cpu": "1500m", "memory": "2Gi", "nvidia.com/gpu": "1", "TPU": "4", "custom": "0.5"},
        {"b": "2", "a": "1"},
    )
    assert params == {
        "num-cpus": "2",
        "memory": str(2 * 2**30),
        "num-gpus": "1",
        "resources": '\'{"TPU":4,"custom":0.5}\'',
        "labels": "a=1,b=2",
    }


def test_container_command_prefix() -> None:
    out = raystart.container_command(["sh", "-c"], ["echo hi"], "ray start --head ")
    assert (
        out
        == " sh  -c  echo hi  && ulimit -n ${RAY_START_ULIMIT_OPEN_FILES:-65536}; ray start --head "
    )
    assert raystart.user_cmd_has_ray_start({"args": ["ray start --head"]})
