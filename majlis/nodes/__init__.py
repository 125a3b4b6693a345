"""The graph's nodes: analyse → phase → recall → respond → remember (settle for approvals).

Each node is a small class whose constructor takes its dependencies and whose
``__call__`` maps the thread state to its turn record (majlis.records), so
each can be tested on its own with a hand-built state.
"""

from majlis.nodes.analyse import Analyse
from majlis.nodes.handoff import Hold, handed_off
from majlis.nodes.phase import PhaseNode
from majlis.nodes.recall import Recall
from majlis.nodes.remember import Remember
from majlis.nodes.respond import Respond
from majlis.nodes.settle import Settle

__all__ = ["Analyse", "Hold", "PhaseNode", "Recall", "Remember", "Respond", "Settle", "handed_off"]
