"""Python client for longrun's HTTP env server (``longrun serve env``): a Gymnasium env over a server session."""

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
__version__ = "0.1.0"
