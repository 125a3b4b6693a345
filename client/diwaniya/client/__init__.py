"""Clients for ``diwaniya.v1.Conversations``: :class:`AsyncClient` (asyncio) and :class:`Client`.

Needs only grpcio, protobuf and grpcio-status. Results are the generated
protobuf messages (``diwaniya.v1.conversations_pb2``, typed by the shipped
``.pyi``); failures are :mod:`diwaniya.errors` leaves with the status's
google.rpc details in ``exc.rpc_status``.

>>> from diwaniya.client import Client                             # doctest: +SKIP
>>> from diwaniya.errors import NotFound
>>> with Client("127.0.0.1:50051") as client:
...     try:
...         client.get_thread("t-missing", user_id="u1")
...     except NotFound as exc:
...         print(exc.rpc_status.code, exc.message)
NOT_FOUND لا توجد محادثة بهذا المعرّف
"""

from diwaniya.client._aio import AsyncClient, AsyncTurnStream
from diwaniya.client._errors import from_rpc_error, from_status
from diwaniya.client._options import NO_RETRY, RetryPolicy, new_request_id
from diwaniya.client._sync import Client, TurnStream

__all__ = ["NO_RETRY", "AsyncClient", "AsyncTurnStream", "Client", "RetryPolicy", "TurnStream",
           "from_rpc_error", "from_status", "new_request_id"]
