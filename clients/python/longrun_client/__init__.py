"""Python client for longrun's HTTP env server (``longrun serve env``): a Gymnasium env over a server session
(``LongrunEnv``), the τ² agent-side helpers the trainer adapters share (``longrun_client.tau2``), a skyrl-gym text env
(``longrun_client.skyrl``) and, in the separate ``longrun_verifiers`` package, a verifiers environment."""

from ._version import PROTOCOL_VERSION
from ._version import __version__ as __version__
from .env import LongrunEnv, make, register_gymnasium_envs
from .errors import (
    BadRequest,
    InvalidAction,
    LongrunError,
    NotFound,
    PayloadTooLarge,
    ResetNeeded,
    ServerError,
    ServerUnreachable,
    SessionBusy,
    TooManySessions,
    Unauthorized,
    UnknownEnv,
    UnknownSession,
)
from .http import LongrunClient
from .spaces import HAS_GYMNASIUM, JsonSpace, space_from_json

__all__ = [
    "BadRequest",
    "HAS_GYMNASIUM",
    "InvalidAction",
    "JsonSpace",
    "LongrunClient",
    "LongrunEnv",
    "LongrunError",
    "PROTOCOL_VERSION",
    "NotFound",
    "PayloadTooLarge",
    "ResetNeeded",
    "ServerError",
    "ServerUnreachable",
    "SessionBusy",
    "TooManySessions",
    "Unauthorized",
    "UnknownEnv",
    "UnknownSession",
    "make",
    "register_gymnasium_envs",
    "space_from_json",
]
