"""The conversation: a LangGraph graph over durable threads, and the Majlis around it.

Public surface: :class:`ConversationEngine` (run turns, thread APIs),
:func:`build_graph` with :class:`GraphDeps`, the persistence openers, and the
typed events. Sub-packages: ``majlis.culture`` (phases, greetings, tone,
calendar), ``majlis.models`` (chat models, offline responder),
``majlis.tools`` (built-in and webhook tools).
"""
