"""Adaptive mixtures in a training loop: feedback, ranks, workers, resume and replay."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from mixplane.errors import ConfigError
from mixplane.load import MixtureDataset
from mixplane.load.adaptive.feedback import Feedback
from mixplane.load.adaptive.weight_log import read_weight_log
from mixplane.load.tools.synthetic import write_catalog
from mixplane.load.torch.adapter import MixtureLoader, torch_loader

TESTS = Path(__file__).parent
RANK_SCRIPT = TESTS / "scripts" / "adaptive_rank.py"
MISTAKES_SCRIPT = TESTS / "scripts" / "feedback_mistakes.py"
# Child processes import the tests' own modules and the mixplane this process imports.
CHILD_PATH = os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH")) if p)
POLICY = {"name": "adaptive_policies:LossSquared", "update_every": 5, "delay": 6}


@pytest.fixture(scope="module")
def spec(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("adaptive")
    catalog = write_catalog(
        str(folder),
        {
            "wiki": {"documents": 400, "seed": 1, "source": "wiki", "mean_tokens": 60},
            "code": {"documents": 300, "seed": 2, "source": "code", "mean_tokens": 80},
            "web": {"documents": 500, "seed": 3, "source": "web", "mean_tokens": 50},
        },
    )
    return {
        "catalog": catalog,
        "cache_dir": str(Path(folder) / "cache"),
        "seq_len": 32,
        "seed": 3,
        "eos_id": 0,
        "global_batch_size": 4,
        "components": {
            "wiki": {"where": "source = 'wiki'", "weight": 0.5},
            "code": {"where": "source = 'code'", "weight": 0.3},
            "web": {"where": "source = 'web'", "weight": 0.2},
        },
        "policy": POLICY,
    }


def loss_of(batch: dict) -> torch.Tensor:
    """The scripted loss: the component's index plus a token-dependent part, exact in
    float64 (so sums are the same however ranks split them)."""
    ids = batch["input_ids"].double()
    return batch["component"].double()[:, None] + torch.remainder(ids, 8) / 8


def run_ranks(config: dict, folder: Path, name: str, script: Path = RANK_SCRIPT) -> list[dict]:
    """Run every rank of `config` as its own process (gloo when several); their outputs."""
    path = folder / f"{name}.json"
    path.write_text(json.dumps(config))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = os.environ | {
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port),
        "PYTHONPATH": CHILD_PATH,
    }
    outputs = [folder / f"{name}-{rank}.out.json" for rank in range(config["world"])]
    processes = [
        subprocess.Popen(
            [sys.executable, str(script), str(path), str(rank), str(out)],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rank, out in enumerate(outputs)
    ]
    for process in processes:
        _, err = process.communicate(timeout=240)
        assert process.returncode == 0, err[-3000:]
    return [json.loads(out.read_text()) for out in outputs]


def replay(spec: dict, log: list[dict], positions: int) -> dict[int, list[int]]:
    """The stream of the mixture without its policy, with the weight log applied."""
    dataset = MixtureDataset({k: v for k, v in spec.items() if k != "policy"})
    dataset.apply_weight_changes(log)
    stream = dataset.batches(4)
    tokens: dict[int, list[int]] = {}
    while len(tokens) < positions:
        batch = next(stream)
        for index, ids in zip(batch["index"].tolist(), batch["input_ids"].tolist(), strict=True):
            tokens[index] = ids
    return tokens


def by_position(batches: list[dict]) -> dict[int, list[int]]:
    found: dict[int, list[int]] = {}
    for batch in batches:
        for index, ids in zip(batch["index"], batch["input_ids"], strict=True):
            assert index not in found, f"position {index} delivered twice"
            found[index] = ids
    return found


def test_two_ranks_with_two_workers_switch_together_and_replay_exactly(spec, tmp_path):
    config = {"spec": spec, "world": 2, "workers": 2, "batch": 2, "steps": 40}
    config["log"] = str(tmp_path / "weights.jsonl")
    first, second = run_ranks(config, tmp_path, "ranks")
    assert first["log"] == second["log"]
    log = first["log"]
    # Updates after steps 4, 9, ..., 39 apply 6 steps later; the last ones fall beyond.
    assert [c["step"] for c in log] == [s + 6 for s in range(4, 40, 5)]
    assert [c["details"]["decided_at"] for c in log] == list(range(4, 40, 5))
    assert read_weight_log(config["log"]) == log
    # The hardest component (web: loss 2 + ...) gains weight, and the stream shows it.
    last = log[-1]["weights"]
    assert last["web"] > last["code"] > last["wiki"]
    delivered = by_position(first["batches"] + second["batches"])
    assert sorted(delivered) == list(range(40 * 4))
    assert delivered == replay(spec, log, 40 * 4)
    late = [
        c for b in first["batches"] + second["batches"] if b["step"] >= 20 for c in b["component"]
    ]
    assert np.bincount(late, minlength=3)[2] > len(late) * 0.4


def test_a_run_killed_and_resumed_gives_the_uninterrupted_batches(spec, tmp_path):
    """SIGKILL after the step-17 checkpoint (mid-way between updates), then resume from it:
    the same batches and weight log as a run that was never interrupted; also with two
    ranks instead of one."""
    base = {"spec": spec, "world": 1, "workers": 2, "batch": 4, "steps": 36}
    (whole,) = run_ranks(base, tmp_path, "whole")
    state = tmp_path / "state.json"
    killed = base | {"steps": 10_000, "save_at": 17, "state": str(state)}
    (tmp_path / "killed.json").write_text(json.dumps(killed))
    process = subprocess.Popen(
        [sys.executable, str(RANK_SCRIPT), str(tmp_path / "killed.json"), "0", "/dev/null"],
        env=os.environ | {"PYTHONPATH": CHILD_PATH},
    )
    deadline = time.monotonic() + 120
    while not state.exists() and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)
    time.sleep(0.3)  # let it run on past the checkpoint, deciding more weights
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    assert state.exists()
    saved = json.loads(state.read_text())
    assert saved["consumed"] == 17 * 4 and saved["policy"]["steps"] == 2

    (resumed,) = run_ranks(base | {"resume": str(state)}, tmp_path, "resumed")
    after = [b for b in whole["batches"] if b["step"] >= 17]
    assert resumed["batches"] == after
    assert resumed["log"] == whole["log"]

    wider = base | {"resume": str(state), "world": 2, "batch": 2}
    ranks = run_ranks(wider, tmp_path, "wider")
    assert all(r["log"] == whole["log"] for r in ranks)
    assert by_position(ranks[0]["batches"] + ranks[1]["batches"]) == by_position(after)


def test_in_process_loop_with_accumulation_and_a_group(spec, tmp_path):
    """Two micro-batches a step, no workers; the policy adapts the children of one group
    and leaves the rest at their declared weights."""
    nested = spec | {
        "global_batch_size": 8,
        "components": {
            "wiki": {"where": "source = 'wiki'", "weight": 0.5},
            "rest": {
                "weight": 0.5,
                "components": {
                    "code": {"where": "source = 'code'", "weight": 0.5},
                    "web": {"where": "source = 'web'", "weight": 0.5},
                },
            },
        },
        "policy": POLICY | {"group": "rest", "delay": 1, "min_weight": 0.3},
    }
    dataset = MixtureDataset(nested)
    loader = torch_loader(dataset, 4)
    feedback = Feedback(loader)
    stream = iter(loader)
    for step in range(12):
        for micro in range(2):
            batch = next(stream)
            feedback.observe(step, loss_of(batch), batch)
            if micro == 0 and step == 3:
                with pytest.raises(ConfigError, match="middle of a step"):
                    dataset.state_dict()
    log = dataset.weight_log()
    assert [c["step"] for c in log] == [5, 10]
    weights = log[-1]["weights"]
    assert set(weights) == {"rest/code", "rest/web"}
    # Losses 1.x (code) and 2.x (web), squared, then the floor 0.3 of each.
    assert weights["rest/web"] > weights["rest/code"] >= 0.3
    assert sum(weights.values()) == pytest.approx(1.0)
    assert log[-1]["details"]["components"] == ["rest/code", "rest/web"]
    assert dataset.state_dict()["policy"]["next_step"] == 12


def test_mistakes_are_clear_errors(spec):
    with pytest.raises(ConfigError, match="has no policy"):
        Feedback(MixtureDataset({k: v for k, v in spec.items() if k != "policy"}))
    short = spec | {"policy": POLICY | {"delay": 2}}
    with pytest.raises(ConfigError, match="set delay: 5 or more"):
        Feedback(torch_loader(MixtureDataset(short), 4, num_workers=2))

    dataset = MixtureDataset(spec)
    loader = torch_loader(dataset, 4)
    feedback = Feedback(loader)
    stream = iter(loader)
    batch = next(stream)
    with pytest.raises(ConfigError, match=r"observe\(step=3\) got a batch of step 0"):
        feedback.observe(3, loss_of(batch), batch)
    with pytest.raises(ConfigError, match=r"\[batch, tokens\]"):
        feedback.observe(0, loss_of(batch).mean(1), batch)
    feedback.observe(0, loss_of(batch), batch)
    next(stream)
    stale = next(stream)
    with pytest.raises(ConfigError, match="observe each batch right after taking it"):
        feedback.observe(1, loss_of(batch), batch)
    with pytest.raises(ConfigError, match="step 1 was next"):
        feedback.observe(2, loss_of(stale), stale)


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ({"name": "nope"}, "unknown policy 'nope'"),
        ({"name": "adaptive_policies:Missing"}, "cannot import policy"),
        ({"name": "adaptive_policies:LossSquared", "powr": 1}, "unknown key 'powr'"),
        ({"name": "static", "update_every": 0}, "update_every"),
        ({"name": "static", "group": "wiki"}, "not a component with children"),
        ({"name": "static", "min_weight": 0.5}, "min_weight 0.5 x 3 components"),
    ],
)
def test_policy_options_are_checked(spec, policy: dict, message: str):
    with pytest.raises(ConfigError, match=message):
        MixtureDataset(spec | {"policy": policy})


def test_a_policy_needs_steps_and_no_schedule(spec):
    with pytest.raises(ConfigError, match="needs global_batch_size"):
        MixtureDataset({k: v for k, v in spec.items() if k != "global_batch_size"})
    schedule = [{"step": 3, "weights": {"wiki": 1, "code": 1, "web": 1}}]
    with pytest.raises(ConfigError, match="a schedule or a policy, not both"):
        MixtureDataset(spec | {"schedule": schedule})


class Finished(Exception):
    pass


def test_the_readme_snippet_as_written(spec, tmp_path, monkeypatch):
    readme = (TESTS.parent / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, flags=re.S)
    snippet = next(block for block in blocks if "Feedback(loader" in block)
    monkeypatch.chdir(tmp_path)
    dataset = MixtureDataset(spec)
    steps = []

    def train_step(batch: dict) -> torch.Tensor:
        if len(steps) == 16:
            raise Finished
        steps.append(batch["index"].tolist())
        return loss_of(batch)

    namespace = {
        "loader": torch_loader(dataset, 4, num_workers=2, prefetch_factor=1),
        "first_step": 0,
        "train_step": train_step,
    }
    with pytest.raises(Finished):
        exec(snippet, namespace)
    log = read_weight_log(tmp_path / "weights.jsonl")
    assert [c["details"]["decided_at"] for c in log] == [4, 9, 14]
    assert log == dataset.weight_log()
    assert steps == [list(range(4 * s, 4 * s + 4)) for s in range(16)]


def test_cli_shows_a_runs_weights_and_its_realized_mixture(spec, tmp_path):
    dataset = MixtureDataset(spec)
    loader = torch_loader(dataset, 4)
    feedback = Feedback(loader, log=tmp_path / "weights.jsonl")
    for step, batch in enumerate(loader):
        feedback.observe(step, loss_of(batch), batch)
        if step == 30:
            break
    (tmp_path / "mixture.yaml").write_text(json.dumps(spec))  # JSON is YAML

    def mixplane(*args: str) -> dict:
        done = subprocess.run(
            [sys.executable, "-m", "mixplane", *args],
            capture_output=True,
            text=True,
            env=os.environ | {"PYTHONPATH": CHILD_PATH},
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    log = str(tmp_path / "weights.jsonl")
    shown = mixplane("mix", "weights", log, "--json", "--plot", str(tmp_path / "w.png"))
    assert shown["components"] == ["wiki", "code", "web"]
    assert shown["steps"] == [c["step"] for c in dataset.weight_log()] == [10, 15, 20, 25, 30, 35]
    first = dataset.weight_log()[0]["details"]
    assert shown["loss"]["web"][0] == first["loss"][2] / first["tokens"][2]
    assert (tmp_path / "w.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    mixture = str(tmp_path / "mixture.yaml")
    declared = mixplane("mix", "preview", mixture, "--steps", "40", "--show", "0", "--json")
    realized = mixplane(
        "mix", "preview", mixture, "--steps", "40", "--show", "0", "--json", "--weight-log", log
    )
    stream = MixtureDataset({k: v for k, v in spec.items() if k != "policy"})
    stream.apply_weight_changes(read_weight_log(log))
    counts = np.bincount(stream.read_positions(np.arange(160))["component"], minlength=3)
    assert [c["sequences"] for c in realized["components"]] == counts.tolist()
    assert [c["sequences"] for c in declared["components"]] != counts.tolist()


@pytest.mark.parametrize("read_ahead", [8, 24, 400])
def test_changes_while_reading_keep_the_stream_a_function_of_the_log(spec, read_ahead):
    """Weight changes made while reading, falling in the block being handed out, in blocks
    read ahead or beyond them, give the stream a reader that knew them all from the start
    gets: what was read ahead before a change is kept, the rest is read again."""
    static = {k: v for k, v in spec.items() if k != "policy"}
    changes = [(3, {"wiki": 0.1, "code": 0.1, "web": 0.8}), (5, {"wiki": 1, "code": 0, "web": 1})]
    changes += [(40, {"wiki": 0.2, "code": 0.7, "web": 0.1})]
    reading = MixtureDataset(static, read_ahead=read_ahead, prefetch=2)
    stream = reading.batches(4)
    got = [next(stream) for _ in range(2)]
    for step, weights in changes:
        reading.set_weights(step, weights)
        got += [next(stream) for _ in range(2)]
    got += [next(stream) for _ in range(40)]
    known = MixtureDataset(static)
    for step, weights in changes:
        known.set_weights(step, weights)
    expected = known.batches(4)
    for batch in got:
        want = next(expected)
        assert batch["index"].tolist() == want["index"].tolist()
        assert np.array_equal(batch["input_ids"], want["input_ids"])


def fed(spec: dict, **changes) -> tuple[MixtureDataset, MixtureLoader, Feedback]:
    """A dataset of `spec` with `changes`, its loader (4 sequences a batch) and Feedback."""
    dataset = MixtureDataset(spec | changes, read_ahead=64)
    loader = torch_loader(dataset, 4)
    return dataset, loader, Feedback(loader)


def steps_of(feedback: Feedback, stream, steps: int, micro: int, loss=loss_of) -> None:
    """Observe `steps` steps of `micro` micro-batches each, as a training loop does."""
    first = feedback.mixer.next_step
    for step in range(first, first + steps):
        for _ in range(micro):
            batch = next(stream)
            feedback.observe(step, loss(batch), batch)


@pytest.mark.parametrize(
    ("shape", "labels", "message"),
    [
        ("B,1", False, "has 1 tokens a sequence, but the batch's sequences have 32 or 31"),
        ("B,5", False, "has 5 tokens a sequence"),
        ("B,3T", False, "has 96 tokens a sequence"),
        ("B*T", False, r"\[batch, tokens\]; got shape \(128,\)"),
        ("B,T-1", True, "has 31 tokens a sequence, but the batch's sequences have 32 tokens"),
        ("mask B,T-1", True, r"loss_mask has shape \(4, 31\), the loss \(4, 32\)"),
        ("mask B", True, r"loss_mask has shape \(4,\), the loss \(4, 32\)"),
        ("int", False, "floating-point tensor"),
    ],
)
def test_a_loss_or_mask_of_the_wrong_shape_is_refused(spec, shape, labels, message):
    """The token counts come from the loss's shape: a loss of another shape than the
    batch's tokens, or a loss_mask of another shape than the loss, would count wrong."""
    dataset, loader, feedback = fed(spec, labels=labels)
    batch = next(iter(loader))
    full = batch["component"].double()[:, None] + torch.zeros(batch["input_ids"].shape)
    losses = {
        "B,1": full[:, :1],
        "B,5": full[:, :5],
        "B,3T": full.repeat(1, 3),
        "B*T": full.reshape(-1),
        "B,T-1": full[:, :-1],
        "mask B,T-1": full,
        "mask B": full,
        "int": full.long(),
    }
    if shape == "mask B,T-1":
        batch["loss_mask"] = batch["loss_mask"][:, :-1]
    if shape == "mask B":
        batch["loss_mask"] = batch["loss_mask"][:, 0]
    with pytest.raises(ConfigError, match=message):
        feedback.observe(0, losses[shape], batch)
    # nothing was counted: the same batch with its right loss is still the next one
    right = full if labels else full[:, :-1]
    feedback.observe(0, right, dict(batch, loss_mask=torch.ones_like(right)) if labels else batch)
    assert feedback.mixer.next_step == 1


def test_the_loss_mask_counts_exactly_the_tokens_it_keeps(spec):
    """With labels, the batch's loss_mask decides which tokens count: zeroing half of
    each row's mask halves the tokens and drops their losses from the sums."""
    dataset, loader, feedback = fed(spec, labels=True, policy=POLICY | {"delay": 1})
    expected_loss, expected_tokens = np.zeros(3), np.zeros(3)
    for step, batch in enumerate(loader):
        batch["loss_mask"][:, ::2] = 0.0  # 16 of 32 labels a row count
        loss = loss_of(batch) + 100.0 * (1 - batch["loss_mask"].double())
        for component, row in zip(batch["component"].tolist(), loss, strict=True):
            expected_loss[component] += float(row[1::2].sum())
            expected_tokens[component] += 16
        feedback.observe(step, loss, batch)
        if step == 4:
            break
    details = dataset.weight_log()[0]["details"]
    assert details["tokens"] == expected_tokens.tolist()
    np.testing.assert_allclose(details["loss"], expected_loss, rtol=1e-12)


def test_every_micro_batch_is_observed_once(spec):
    """Two micro-batches a step: one observed twice, or taken and not observed, or a step
    left incomplete, is an error before anything is counted, not a wrong sum."""
    dataset, loader, feedback = fed(spec, global_batch_size=8, policy=POLICY | {"delay": 1})
    stream = iter(loader)
    steps_of(feedback, stream, 2, 2)

    batch = next(stream)  # step 2, first micro-batch
    feedback.observe(2, loss_of(batch), batch)
    with pytest.raises(ConfigError, match=r"positions 16..19 of step 2 were already observed"):
        feedback.observe(2, loss_of(batch), batch)
    batch = next(stream)
    feedback.observe(2, loss_of(batch), batch)
    with pytest.raises(ConfigError, match=r"step 2 were already observed \(the step is complete"):
        feedback.observe(2, loss_of(batch), batch)
    at_step_3 = dataset.state_dict()

    next(stream)  # step 3, first micro-batch: taken, not observed
    batch = next(stream)
    with pytest.raises(ConfigError, match=r"positions 24..27 of step 3 were taken but not"):
        feedback.observe(3, loss_of(batch), batch)
    with pytest.raises(ConfigError, match=r"positions 24..31 received but not observed"):
        dataset.state_dict()

    dataset.load_state_dict(at_step_3)
    stream = iter(loader)
    batch = next(stream)
    feedback.observe(3, loss_of(batch), batch)
    next(stream)  # its second micro-batch, not observed
    batch = next(stream)
    with pytest.raises(ConfigError, match=r"step 3 is not complete: its positions 28..31"):
        feedback.observe(4, loss_of(batch), batch)

    # What was observed once counts once: 5 steps of 8 sequences of 32 tokens.
    dataset.load_state_dict(at_step_3)
    stream = iter(loader)
    steps_of(feedback, stream, 2, 2)
    (change,) = dataset.weight_log()
    assert change["details"]["decided_at"] == 4
    assert sum(change["details"]["tokens"]) == 5 * 8 * 32


def test_a_mistake_on_one_rank_stops_every_rank_together(spec, tmp_path):
    """Two gloo ranks: rank 1 observes a micro-batch twice, skips one, or observes a
    whole step's batch again; or the policy decides differently on each rank. Rank 1 raises
    before anything of the batch is counted, and rank 0 raises too, at the all-reduce that
    rank 1's failure joined, naming it: no rank waits on one that left, none continues on
    wrong sums. A nan loss on rank 1 stops both ranks at its step; skipped, both leave the
    same step out. Validation losses given on one rank reach both."""
    scenarios = [
        {"name": "twice", "batch": 1, "mistake": "twice"},
        {"name": "skip", "batch": 1, "mistake": "skip"},
        {"name": "twice_whole", "batch": 2, "mistake": "twice_whole"},
        {
            "name": "disagree",
            "batch": 2,
            "mistake": "none",
            "policy": {"name": "adaptive_policies:RankDependent", "update_every": 5, "delay": 1},
        },
        {"name": "nan", "batch": 1, "mistake": "nan"},
        {"name": "validation", "batch": 1, "mistake": "validation", "culprit": 0},
        {
            "name": "inf_skip",
            "batch": 1,
            "mistake": "inf",
            "policy": POLICY | {"delay": 1, "on_nonfinite": "skip"},
        },
    ]
    scenarios = [{"steps": 8, "culprit": 1, "at_step": 2} | s for s in scenarios]
    config = {"spec": spec, "world": 2, "scenarios": scenarios}
    first, second = run_ranks(config, tmp_path, "mistakes", script=MISTAKES_SCRIPT)
    assert "positions 9..9 of step 2 were already observed" in second["twice"]["error"]
    assert "positions 9..9 of step 2 were taken but not observed" in second["skip"]["error"]
    assert "positions 9..11 of step 2 were already observed" in second["twice_whole"]["error"]
    for name in ("twice", "skip"):
        assert first[name]["error"].startswith("rank 1 stopped observing at step 2: a batch")
        assert first[name]["step"] == second[name]["step"] == 2
    assert first["twice_whole"]["error"].startswith("rank 1 stopped observing at step 2")
    assert first["twice_whole"]["step"] == 3  # the all-reduce rank 1's failure joined
    for rank in (first, second):
        assert "ranks decided different weights at step 4" in rank["disagree"]["error"]
        assert rank["disagree"]["step"] == 4 and rank["disagree"]["log"] == []
        # a nan on rank 1 stops both at step 2; an inf, skipped, is left out by both
        assert re.match(
            r"step 2: the loss of some tokens is nan or inf \(1 of ", rank["nan"]["error"]
        )
        assert rank["nan"]["step"] == 2
        assert rank["inf_skip"]["error"] is None
        assert [c["details"]["skipped_steps"] for c in rank["inf_skip"]["log"]] == [1]
    assert first["inf_skip"]["log"] == second["inf_skip"]["log"]
    # validation losses given on rank 0 only reach both ranks' policies alike
    assert first["validation"]["log"] == second["validation"]["log"]
    expected = [{"step": 2, "loss": [None, None, 2.5]}]
    assert first["validation"]["log"][0]["details"]["validation"] == expected


@pytest.mark.parametrize("bad", ["nan", "inf", "-inf"])
def test_a_nonfinite_loss_is_refused_and_never_reaches_the_policy(spec, bad):
    """One nan or inf token stops the run at its step, naming the component; the policy's
    state holds only the finite steps before it (standard JSON), and nothing more is
    observed or decided."""
    dataset, loader, feedback = fed(spec, policy=POLICY | {"delay": 1})
    stream = iter(loader)
    steps_of(feedback, stream, 2, 1)
    before = json.dumps(dataset.adaptive.state_dict(), allow_nan=False)
    batch = next(stream)
    loss = loss_of(batch)
    loss[1, 7] = float(bad)
    name = dataset.names[int(batch["component"][1])]
    message = rf"step 2: the loss of some tokens is nan or inf \(1 of {name}, over every rank\)"
    with pytest.raises(ConfigError, match=message):
        feedback.observe(2, loss, batch)
    assert json.dumps(dataset.adaptive.state_dict(), allow_nan=False) == before
    batch = next(stream)
    with pytest.raises(ConfigError, match="on_nonfinite: skip"):
        feedback.observe(3, loss_of(batch), batch)
    with pytest.raises(ConfigError, match="no loader state after observe stopped"):
        dataset.state_dict()
    assert dataset.weight_log() == []


def test_a_masked_out_nonfinite_loss_does_not_count(spec):
    """With labels, a nan where the loss_mask is 0 is no token of the loss."""
    dataset, loader, feedback = fed(spec, labels=True)
    batch = next(iter(loader))
    batch["loss_mask"][:, -1] = 0.0
    loss = loss_of(batch)
    loss[:, -1] = float("nan")
    feedback.observe(0, loss, batch)
    assert dataset.adaptive.tokens.sum() == 4 * 31
    np.testing.assert_allclose(dataset.adaptive.loss.sum(), float(loss[:, :-1].sum()))


def test_skip_leaves_nonfinite_steps_out_and_a_diverged_run_decides_nothing(spec):
    """on_nonfinite: skip: the step with a nan is left out (and counted as skipped); from
    the step where every loss is nan, no update decides anything."""
    policy = POLICY | {"delay": 1, "on_nonfinite": "skip"}
    dataset, loader, feedback = fed(spec, policy=policy)

    def diverging(batch: dict) -> torch.Tensor:
        loss = loss_of(batch)
        step = int(batch["index"][0]) // 4
        if step == 7:
            loss[0, 0] = float("nan")
        if step >= 10:
            loss[:] = float("inf")
        return loss

    steps_of(feedback, iter(loader), 25, 1, loss=diverging)
    log = dataset.weight_log()
    assert [c["details"]["decided_at"] for c in log] == [4, 9]  # none at 14, 19 and 24
    assert [c["details"]["skipped_steps"] for c in log] == [0, 1]
    assert sum(log[1]["details"]["tokens"]) == 4 * 4 * 32  # steps 5, 6, 8 and 9
    assert dataset.adaptive.next_step == 25
    json.dumps(dataset.state_dict(), allow_nan=False)


def test_validation_losses_reach_the_policy_and_the_log(spec):
    """observe(..., validation_loss=...) at any micro-batch of a step: the decision after
    it holds them (by the policy's components, null where none), and the policy's
    observation has them with the tokens up to their step."""
    dataset, loader, feedback = fed(spec, global_batch_size=8, policy=POLICY | {"delay": 1})
    stream = iter(loader)
    steps_of(feedback, stream, 2, 2)
    batch = next(stream)
    feedback.observe(2, loss_of(batch), batch)
    batch = next(stream)
    with pytest.raises(ConfigError, match=r"components \(wiki, code, web\).*\['wbe'\]"):
        feedback.observe(2, loss_of(batch), batch, validation_loss={"wbe": 2.0})
    with pytest.raises(ConfigError, match="validation losses must be finite, got web=nan"):
        feedback.observe(2, loss_of(batch), batch, validation_loss={"web": float("nan")})
    validation = {"code": 2.5, "web": torch.tensor(3)}
    feedback.observe(2, loss_of(batch), batch, validation_loss=validation)
    steps_of(feedback, stream, 2, 2)
    (change,) = dataset.weight_log()
    assert change["details"]["validation"] == [{"step": 2, "loss": [None, 2.5, 3.0]}]

    batch = next(stream)  # step 5
    feedback.observe(5, loss_of(batch), batch, validation_loss={"wiki": 1.0})
    batch = next(stream)
    with pytest.raises(ConfigError, match="validation_loss was already given in this step"):
        feedback.observe(5, loss_of(batch), batch, validation_loss={"wiki": 1.0})
    feedback.observe(5, loss_of(batch), batch)
    (point,) = dataset.adaptive.validation
    assert point.step == 5 and point.tokens.sum() == 8 * 32
    assert np.isnan(point.loss[1]) and point.loss[0] == 1.0
    json.dumps(dataset.state_dict(), allow_nan=False)
