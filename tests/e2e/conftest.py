"""Fixtures of the end-to-end tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pandafs.vault import Vault
from tests.support.chat import Chat, chatting


@pytest.fixture
def chat(vault: Vault) -> Iterator[Chat]:
    with chatting(vault) as conversation:
        yield conversation
