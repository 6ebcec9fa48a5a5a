"""Run one submission inside the sandbox and write its answers out as data.

``grade.py`` starts this script inside bubblewrap, in a process that holds nothing but a
private copy of the submission's code cells and the grading plan (which names to read, the
inputs to call function answers with). The script

1. keeps its standard output for the result and sends everything the notebook prints to
   ``/dev/null``;
2. makes the ``posenc`` functions that would answer an implementation question raise
   ``PermissionError`` ("not allowed"), wherever the notebook finds them: those of the
   plan's ``not_allowed`` for the whole run, those of ``not_allowed_in_functions`` only
   while the function answers of their own question are called (step 4), so that code
   the notebook hands out, and the answers to other questions, may still use them;
3. runs the code cells in an IPython shell, one after the other, stopping any cell that runs
   longer than the plan allows; ``import otter`` finds a stand-in whose ``grader.check``
   does nothing (the checks run in the grader, not here);
4. reads each answer the checks need from the notebook's namespace: a value as it is, a
   function by calling it on every input the checks will ask about, hidden ones included;
5. writes the answers, packed by ``answer_codec`` (never pickle), to its standard output.

Nothing here is trusted: the notebook runs in this process and can change anything in it.
It can only change its own answers, which the grader checks on its own side.

Usage (inside the sandbox)::

    python sandbox_runner.py PLAN.npz CELLS.npz
"""

from __future__ import annotations

import copy
import os
import signal
import sys
import time

#: Marks the start of the result on standard output; the grader reads the last one.
MAGIC = b"\nPOSENC-GRADING-RESULT\n"


class CellTimeout(TimeoutError):
    """Raised in a cell or a call that runs longer than the grader allows."""


def _short(text: object, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _arm(seconds: float) -> None:
    def alarm(signum, frame):
        raise CellTimeout(f"stopped after {seconds:g} s")

    signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds, min(seconds, 2.0))


def _disarm() -> None:
    signal.setitimer(signal.ITIMER_REAL, 0)


def write_otter_stand_in(folder: str) -> None:
    """A package ``otter`` whose ``Notebook`` accepts every call and does nothing."""
    os.makedirs(os.path.join(folder, "otter"), exist_ok=True)
    with open(os.path.join(folder, "otter", "__init__.py"), "w") as handle:
        handle.write(
            '"""Stand-in for otter while grading: the checks run outside the notebook."""\n'
            "class Notebook:\n"
            "    def __init__(self, *args, **kwargs):\n"
            "        pass\n"
            "    def __getattr__(self, name):\n"
            "        return lambda *args, **kwargs: None\n"
        )


def block(functions: dict[str, str]) -> tuple[list, list[str]]:
    """Make each ``posenc`` function named in ``functions`` raise ``PermissionError``.

    ``functions`` maps a dotted name (``posenc.variants.split_permutation``) to the question
    that asks for it. The function's code is replaced, so every reference to it, however
    the notebook imported it, raises. Returns what :func:`unblock` needs to restore them,
    and notes on names that could not be blocked.
    """
    import importlib

    notes, saved = [], []
    for dotted, question in functions.items():
        module_name, _, attribute = dotted.rpartition(".")
        try:
            function = getattr(importlib.import_module(module_name), attribute)
            message = (
                f"{dotted} is not allowed in this assignment: {question} asks you to "
                "write this computation yourself"
            )
            namespace: dict = {}
            exec(  # a stub with the message as a constant, so that it needs no globals
                f"def {attribute}(*args, **kwargs):\n    raise PermissionError({message!r})\n",
                namespace,
            )
            saved.append((function, function.__code__, function.__defaults__,
                          function.__kwdefaults__))
            function.__code__ = namespace[attribute].__code__
            function.__defaults__ = None
            function.__kwdefaults__ = None
        except Exception as error:  # a name the plan got wrong is reported, not fatal
            notes.append(f"could not block {dotted}: {_short(error)}")
    return saved, notes


def unblock(saved: list) -> None:
    """Give the functions that :func:`block` replaced their code back."""
    for function, code, defaults, kwdefaults in reversed(saved):
        function.__code__ = code
        function.__defaults__ = defaults
        function.__kwdefaults__ = kwdefaults


def run_cells(cells: list[str], cell_timeout: float) -> tuple[dict, list]:
    """Run ``cells`` in a fresh IPython shell; return its namespace and the cell errors."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance(history_length=0, hist_file=":memory:", colors="NoColor")
    errors = []
    for number, source in enumerate(cells, start=1):
        _arm(cell_timeout)
        try:
            result = shell.run_cell(source, store_history=False, silent=False)
        except BaseException as error:  # a cell that escapes IPython's own handling
            errors.append([number, f"{type(error).__name__}: {_short(error, 200)}"])
            continue
        finally:
            _disarm()
        error = result.error_before_exec or result.error_in_exec
        if error is not None:
            errors.append([number, f"{type(error).__name__}: {_short(error, 200)}"])
    return shell.user_ns, errors


def call_each(function, calls: list, budget: float) -> list[dict]:
    """Call ``function`` on every recorded ``(args, kwargs)``; the outputs or errors.

    All the calls of one function share ``budget`` seconds: once it is spent (say, by a
    loop that never ends for odd widths), the remaining calls are not made and fail.
    """
    outcomes = []
    deadline = time.monotonic() + budget
    for args, kwargs in calls:
        left = deadline - time.monotonic()
        if left <= 0:
            outcomes.append({"ok": False, "error": (
                f"CellTimeout: not called: the calls before used up the {budget:g} s allowed")})
            continue
        args, kwargs = copy.deepcopy(args), copy.deepcopy(kwargs)
        _arm(left)
        try:
            outcomes.append({"ok": True, "value": function(*args, **kwargs)})
        except BaseException as error:  # whatever the answer raises is part of the answer
            message = _short(error)
            if isinstance(error, CellTimeout):
                message = f"did not return within the {budget:g} s allowed for its calls"
            outcomes.append({"ok": False, "error": f"{type(error).__name__}: {message}",
                             "type": _builtin_type(error), "message": message})
        finally:
            _disarm()
    return outcomes


def _builtin_type(error: BaseException) -> str:
    """Name of the first built-in exception class of ``error`` (``ValueError`` for a
    subclass of it), so that a check's ``except ValueError`` sees it in the grader."""
    import builtins

    for cls in type(error).__mro__:
        if getattr(builtins, cls.__name__, None) is cls:
            return cls.__name__
    return "Exception"


def main(plan_path: str, cells_path: str) -> None:
    """Run the submission and write its answers to the standard output."""
    result_fd = os.dup(1)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    try:
        result = answers(plan_path, cells_path)
    except BaseException as error:  # the runner itself failed: say so in the result
        result = {"error": f"the sandbox runner failed: {type(error).__name__}: {_short(error)}"}
    write_result(result_fd, result)
    os._exit(0)  # skip interpreter shutdown, where the notebook's objects could still run code


def answers(plan_path: str, cells_path: str) -> dict:
    """Run the notebook and collect the answers the plan names."""
    import answer_codec

    start = time.monotonic()
    with open(plan_path, "rb") as handle:
        plan = answer_codec.unpack(handle.read())
    with open(cells_path, "rb") as handle:
        cells = answer_codec.unpack(handle.read())
    stand_in = os.path.join(os.environ.get("TMPDIR", "/tmp"), "stand-in")
    write_otter_stand_in(stand_in)
    sys.path.insert(0, stand_in)
    _, notes = block(plan["not_allowed"])

    namespace, cell_errors = run_cells(cells, plan["cell_timeout"])
    ran = time.monotonic() - start
    in_functions = plan.get("not_allowed_in_functions", {})
    questions_of = plan.get("questions_of", {})

    values, functions, missing = {}, {}, []
    for name in plan["names"]:
        if name not in namespace:
            missing.append(name)
            continue
        value = namespace[name]
        if callable(value) and not isinstance(value, type):
            # posenc functions that would answer this function's question are refused
            # while it is called, and only then.
            mine = set(questions_of.get(name, []))
            scope = {d: q for d, q in in_functions.items() if q in mine}
            saved, blocked_notes = block(scope)
            notes += blocked_notes
            try:
                functions[name] = call_each(
                    value, plan["calls"].get(name, []), plan["call_timeout"])
            finally:
                unblock(saved)
        else:
            values[name] = value
    return {
        "values": values,
        "functions": functions,
        "missing": missing,
        "cell_errors": cell_errors,
        "notes": notes,
        "seconds": [ran, time.monotonic() - start - ran],
    }


def write_result(result_fd: int, result: dict) -> None:
    """Pack ``result`` and write it, after the marker and its length, to ``result_fd``."""
    import answer_codec

    try:
        data = answer_codec.pack(result)
    except BaseException as error:  # for example an answer too large for the memory limit
        data = answer_codec.pack({"error": f"the answers could not be written: {_short(error)}"})
    os.write(result_fd, MAGIC + len(data).to_bytes(8, "big"))
    view = memoryview(data)
    while view:
        written = os.write(result_fd, view)
        view = view[written:]


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
