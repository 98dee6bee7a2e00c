"""`pandafs` exports its library API: `from pandafs import Vault, Memory, Pipeline`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import pandafs


def test_the_library_api_is_importable_from_the_package(tmp_path: Path) -> None:
    from pandafs import Memory, Pipeline, Vault
    from pandafs.memory.api import Memory as MemoryClass
    from pandafs.pipeline.turn import Pipeline as PipelineClass
    from pandafs.vault import Vault as VaultClass

    assert (Vault, Memory, Pipeline) == (VaultClass, MemoryClass, PipelineClass)
    assert sorted(pandafs.__all__) == ["Memory", "Pipeline", "Vault", "__version__"]
    assert all(getattr(pandafs, name) is not None for name in pandafs.__all__)
    with pytest.raises(AttributeError):
        pandafs.Nothing  # noqa: B018

    vault, _ = Vault.init(tmp_path / "v")
    Memory(vault).save("My hamster Biscuit eats sunflower seeds", user="alice", doc_type="fact")
    assert Memory(vault).search("hamster seeds", user="alice")
    with Pipeline(vault) as pipeline:
        assert pipeline.ask("What does my hamster eat?", user="alice").answer


def test_importing_the_package_imports_none_of_its_parts() -> None:
    """Every command imports `pandafs`; the API's modules come only when used."""
    code = (
        "import sys, pandafs; print(sorted(m for m in sys.modules if m.startswith(('pandafs.', 'tantivy'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
