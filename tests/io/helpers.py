"""Real evaluation files written by the harnesses themselves, for the readers' tests.

``write_inspect_logs`` runs a small Inspect task offline (Inspect's mock model with fixed
outputs whose token usage is set, so that no tokenizer is fetched): items whose scores are
known functions of the item and the epoch, so that tests can check the reader's values
against those functions. ``python -m tests.io.helpers`` rewrites the committed fixtures in
``tests/io/data/`` (needs ``inspect-ai``).
"""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).parent / "data"
CATEGORIES = ("math", "geo", "bio")
#: the ``grade`` scorer's value of item i in epoch e: GRADES[(i + e) % 4]
GRADES = ("C", "P", "I", "N")
#: the long metadata text of item 0 (over Inspect's 1,000-character summary limit)
LONG_NOTE = "a long note " * 100


def quality(i: int, epoch: int) -> float:
    """The ``quality`` scorer's value of item ``i`` in ``epoch``."""
    return round(((i * 7 + epoch * 3) % 11) / 10, 2)


def metadata(i: int) -> dict:
    meta = {"category": CATEGORIES[i % 3], "difficulty": i % 2, "source": {"name": "set", "year": 2020 + i % 2}}
    if i == 0:
        meta["note"] = LONG_NOTE
    return meta


def write_inspect_logs(folder, models=("model-a", "model-b"), formats=("eval", "json"), n=6, epochs=3):
    """Run the task once per model (log format from ``formats``); return the log paths."""
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import Score, accuracy, match, mean, scorer
    from inspect_ai.solver import generate

    @scorer(metrics=[accuracy()])
    def grade():
        async def score(state, target):
            return Score(value=GRADES[(int(state.sample_id) + state.epoch) % 4])

        return score

    @scorer(metrics=[mean()])
    def quality_scorer():
        async def score(state, target):
            return Score(value=quality(int(state.sample_id), state.epoch))

        return score

    @scorer(metrics={"*": [mean()]})
    def parts():
        async def score(state, target):
            return Score(value={"style": GRADES[int(state.sample_id) % 4], "length": 0.25})

        return score

    paths = []
    for m, (name, fmt) in enumerate(zip(models, formats, strict=True)):
        samples = [Sample(input=f"question {i}", target=str(i % 3), id=i, metadata=metadata(i)) for i in range(n)]

        def outputs(m=m, name=name):
            for k in range(n * epochs + 10):
                out = ModelOutput.from_content(model=f"mockllm/{name}", content=str((k * (5 + 2 * m)) % 3))
                out.usage = ModelUsage(input_tokens=5, output_tokens=1, total_tokens=6)
                yield out

        model = get_model(f"mockllm/{name}", custom_outputs=outputs())
        task = Task(
            dataset=MemoryDataset(samples, name="toy"),
            solver=generate(),
            name="toy",
            scorer=[match(), grade(), quality_scorer(), parts()],
        )
        logs = inspect_eval(
            task, model=model, epochs=epochs, log_dir=str(folder), log_format=fmt, display="none", max_connections=1
        )
        paths.append(Path(logs[0].location))
    return paths


def judged(n, accuracy, seed):
    """The judge's verdicts (1 pass, 0 fail) of ``n`` items whose category is ``CATEGORIES[i % 3]``:
    item i passes when a seeded uniform draw is below ``accuracy[category]``."""
    import numpy as np

    draws = np.random.default_rng(seed).random(n)
    return [int(draws[i] < accuracy[CATEGORIES[i % 3]]) for i in range(n)]


def write_judged_logs(folder, verdicts, epochs=1):
    """One Inspect log per model (``verdicts``: model -> list of 0/1 per item) with the scorer ``judge``.

    Item i has the metadata ``category`` ``CATEGORIES[i % 3]``; the judge's value is ``C`` where
    the verdict is 1, else ``I``, in every epoch. Returns the log paths in the models' order.
    """
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import Score, accuracy, scorer
    from inspect_ai.solver import generate

    paths = []
    for name, passed in verdicts.items():

        @scorer(metrics=[accuracy()])
        def judge(passed=passed):
            async def score(state, target):
                return Score(value="C" if passed[int(state.sample_id)] else "I")

            return score

        n = len(passed)
        samples = [
            Sample(input=f"question {i}", target="x", id=i, metadata={"category": CATEGORIES[i % 3]}) for i in range(n)
        ]

        def outputs(name=name, n=n):
            for _ in range(n * epochs + 10):
                out = ModelOutput.from_content(model=f"mockllm/{name}", content="x")
                out.usage = ModelUsage(input_tokens=5, output_tokens=1, total_tokens=6)
                yield out

        model = get_model(f"mockllm/{name}", custom_outputs=outputs())
        task = Task(dataset=MemoryDataset(samples, name="qa"), solver=generate(), name="qa", scorer=judge())
        logs = inspect_eval(task, model=model, epochs=epochs, log_dir=str(folder), display="none", max_connections=20)
        paths.append(Path(logs[0].location))
    return paths


if __name__ == "__main__":  # pragma: no cover
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for path, stem in zip(write_inspect_logs(tmp), ("model-a", "model-b"), strict=True):
            shutil.copy(path, DATA / f"inspect_{stem}{path.suffix}")
