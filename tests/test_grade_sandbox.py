"""The parts of the sandboxed grader that need no notebook: the codec that answers leave
the sandbox with, the replay of function answers, the sandbox's walls and limits."""

from __future__ import annotations

import io
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENTS = ROOT / "assignments"
sys.path.insert(0, str(ASSIGNMENTS))

import answer_codec  # noqa: E402
import grade  # noqa: E402

import posenc  # noqa: E402


@pytest.mark.parametrize(
    "value",
    [None, True, 3, 2**80, -0.5, math.inf, 1 + 2j, "π", b"\x00\xff", ..., np.float64(1.5),
     np.int32(-4), np.bool_(True), np.arange(6.0).reshape(2, 3), np.array(["a", "bc"]),
     [1, (2, 3), {4}], {"a": [1.0], (16, False): 0.5}, posenc.sinusoidal],
)
def test_codec_round_trip_keeps_value_and_type(value) -> None:
    back = answer_codec.unpack(answer_codec.pack(value))
    assert type(back) is type(value)
    if isinstance(value, np.ndarray):
        np.testing.assert_array_equal(back, value)
        assert back.dtype == value.dtype
    else:
        assert back == value or (value is ...)


def test_codec_turns_objects_into_named_stand_ins_never_pickle() -> None:
    class Sneaky:
        def __reduce__(self):
            raise AssertionError("pickled")

    value = {"obj": Sneaky(), "arr": np.array([Sneaky()], dtype=object), "f": lambda: 1}
    back = answer_codec.unpack(answer_codec.pack(value))
    assert back["obj"] == answer_codec.Unsupported("Sneaky")
    assert isinstance(back["arr"], answer_codec.Unsupported)
    assert isinstance(back["f"], answer_codec.Unsupported)
    assert "cannot read" in repr(back["obj"])


def test_codec_refuses_pickles_and_garbage() -> None:
    buffer = io.BytesIO()
    np.save(buffer, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    for data in (b"", b"junk", buffer.getvalue()):
        with pytest.raises(answer_codec.CodecError):
            answer_codec.unpack(data)
    bad = {"t": "function", "v": "os:system"}
    with pytest.raises(answer_codec.CodecError, match="not passed by name"):
        answer_codec.decode(bad, [])


def test_codec_matches_calls_up_to_rounding() -> None:
    a = ((np.array([1.0, 2.0]), 3), {"base": 10.0})
    b = ((np.array([1.0, 2.0 + 1e-15]), 3), {"base": 10.0})
    c = ((np.array([1.0, 2.1]), 3), {"base": 10.0})
    assert answer_codec.key(a) != answer_codec.key(b)
    assert answer_codec.close(a, b) and not answer_codec.close(a, c)
    assert not answer_codec.close(((1,), {}), ((1.0,), {}))


def test_codec_carries_torch_tensors_as_data() -> None:
    """Tensors leave the sandbox as arrays and come back as tensors of the same dtype and
    values, detached; a dtype NumPy lacks becomes a stand-in; calls on tensors match."""
    torch = pytest.importorskip("torch")
    values = [torch.arange(6, dtype=torch.float32).reshape(2, 3),
              torch.tensor([[0, 1], [1, 1]]), torch.tensor([True, False]),
              torch.nn.Parameter(torch.ones(2, dtype=torch.float64)),
              torch.tensor([1 + 2j]), torch.zeros(0, 4)]
    for value in values:
        back = answer_codec.unpack(answer_codec.pack({"x": [value]}))["x"][0]
        assert type(back) is torch.Tensor and back.dtype == value.dtype
        assert not back.requires_grad and torch.equal(back, value.detach())
    odd = answer_codec.unpack(answer_codec.pack(torch.ones(2, dtype=torch.bfloat16)))
    assert odd == answer_codec.Unsupported("PyTorch tensor of dtype torch.bfloat16")
    a = ((torch.tensor([1.0, 2.0], dtype=torch.float64),), {})
    b = ((torch.tensor([1.0, 2.0 + 1e-15], dtype=torch.float64),), {})
    assert answer_codec.key(a) != answer_codec.key(b) and answer_codec.close(a, b)
    assert answer_codec.key(a) != answer_codec.key(((np.array([1.0, 2.0]),), {}))
    assert not answer_codec.close(a, ((torch.tensor([1.0, 2.1], dtype=torch.float64),), {}))
    bad = {"t": "tensor", "i": 0}
    with pytest.raises(answer_codec.CodecError, match="a tensor of dtype"):
        answer_codec.decode(bad, [np.array(["a"])])


def test_codec_module_imports_no_torch() -> None:
    """The codec is copied into every sandbox: importing it costs no PyTorch import."""
    code = (f"import sys; sys.path.insert(0, {str(ASSIGNMENTS)!r}); import answer_codec; "
            "answer_codec.unpack(answer_codec.pack([1.0])); print('torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "False"


def test_replay_returns_copies_and_raises_like_the_answer() -> None:
    calls = [((np.arange(3),), {}), ((-1,), {}), ((2,), {})]
    outcomes = [{"ok": True, "value": np.ones(3)},
                {"ok": False, "type": "ValueError", "message": "negative",
                 "error": "ValueError: negative"},
                {"ok": False, "type": "os.system", "message": "x", "error": "Odd: x"}]
    replay = grade.Replay("f", calls, outcomes)
    first = replay(np.arange(3))
    first[:] = 0
    np.testing.assert_array_equal(replay(np.arange(3)), np.ones(3))
    with pytest.raises(ValueError, match="negative"):
        replay(-1)
    with pytest.raises(grade.SubmissionError, match="Odd: x"):
        replay(2)
    with pytest.raises(LookupError, match="did not prepare"):
        replay(5)


def test_master_notebooks_name_their_questions_and_forbidden_functions() -> None:
    master = grade.read_master(grade.find_master("02_mathematics"))
    assert [q.name for q in master.questions] == ["q1", "q2", "q3", "q4", "q5"]
    assert master.not_allowed == {"posenc.wavelengths": "q1"}
    assert master.not_allowed_in_functions["posenc.relative_rotation"] == "q3"
    one = grade.read_master(grade.find_master("01_motivation"))
    assert {"embed", "w_q", "w_k", "w_v"} <= one.given
    assert "undo_permutation" not in one.given


def test_grading_refuses_without_a_sandbox_unless_unsafe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(grade, "sandbox_available", lambda: None)
    with pytest.raises(RuntimeError, match="--unsafe"):
        grade.grade_folder(tmp_path, "02_mathematics")
    done = subprocess.run([sys.executable, str(ASSIGNMENTS / "grade.py"), "--help"],
                          capture_output=True, text=True, check=True)
    assert "read access to every file you can read" in done.stdout


def test_the_sandbox_sees_no_course_files_no_network_no_processes(tmp_path: Path) -> None:
    """The runner's command line, run on a probe: what it can see, write and start."""
    probe = '''
import os, socket, subprocess, sys
print("ROOT", sorted(os.listdir(sys.argv[1])) if os.path.isdir(sys.argv[1]) else [])
print("HOME", sorted(os.listdir("/home/student")))
print("ENV", sorted(os.environ))
print("PIDS", sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
print("UID", os.getuid())
for path in (sys.prefix, "/usr/bin"):
    try:
        open(os.path.join(path, "x"), "w")
        print("WROTE", path)
    except OSError:
        pass
try:
    socket.create_connection(("pypi.org", 443), timeout=2)
    print("NETWORK")
except OSError:
    pass
'''
    bwrap = grade.sandbox_available()
    assert bwrap is not None, "bubblewrap cannot start a sandbox here (make system-deps)"
    sandbox = grade.Sandbox(bwrap)
    work = tmp_path / "work"
    (work / "runner").mkdir(parents=True)
    (work / "plan.npz").write_bytes(b"")
    (work / "cells.npz").write_bytes(b"")
    (work / "runner" / "probe.py").write_text(probe)
    uid = grade.FIRST_UID + grade.UID_COUNT - 1 if grade.os.geteuid() == 0 else None
    command = sandbox.command(work, uid)
    at = command.index("-I")
    command = [*command[: at + 1], "/grader/probe.py", str(ROOT)]
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=60,
                          preexec_fn=sandbox.limits(30))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "WROTE" not in out and "NETWORK" not in out
    assert "PIDS [1, 2]" in out, out
    assert "HOME []" in out
    root = out.split("ROOT ")[1].splitlines()[0]
    assert "assignments" not in root and "tests" not in root, root
    if sys.prefix.startswith(str(ROOT)):
        assert ".venv" in root, root
    assert "GRADING" not in out and "SECRET" not in out
    if uid is not None:
        assert f"UID {uid}" in out


def test_blocking_a_posenc_function_reaches_every_reference_and_can_be_undone() -> None:
    import sandbox_runner

    from posenc.encodings import wavelengths as imported_early

    saved, notes = sandbox_runner.block({"posenc.wavelengths": "q1", "posenc.nothing": "q2"})
    try:
        with pytest.raises(PermissionError, match="q1 asks you to write this computation"):
            posenc.wavelengths(8)
        with pytest.raises(PermissionError):
            imported_early(8, base=100.0)
        assert notes and "could not block posenc.nothing" in notes[0]
    finally:
        sandbox_runner.unblock(saved)
    np.testing.assert_allclose(posenc.wavelengths(4), 2 * np.pi / posenc.frequencies(4))


def test_hidden_inputs_are_redrawn_from_the_grading_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reference run records the inputs that the secret draws, so each offering's
    hidden check of assignment 2, question 2, calls the answer on other inputs."""
    import build

    build.build_all(["02_mathematics"])
    autograder = grade.find_autograder("02_mathematics")
    master = grade.find_master("02_mathematics")
    calls = {}
    for secret in ("spring", "autumn", "spring"):
        monkeypatch.setenv(grade.SECRET_VARIABLE, secret)
        folder = tmp_path / f"{secret}-{len(calls)}"
        folder.mkdir()
        plan = answer_codec.unpack(grade.make_plan(master, autograder, folder).read_bytes())
        calls.setdefault(secret, []).append(
            {answer_codec.key(c) for c in plan["calls"]["row_norm_squared"]})
    assert calls["spring"][0] == calls["spring"][1]
    assert calls["spring"][0] != calls["autumn"][0]
