"""doctor's answer to a server whose requests to itself went through an HTTP proxy.

SGLang checks that it is up before it serves: its warmup (``_wait_and_warmup``, later
``_execute_server_warmup``, in sglang/srt/server.py and entrypoints/http_server.py of every
release read, 0.4.0 to 0.5.23) calls ``requests.get(server_args.url() + "/get_model_info")``
(``/model_info`` in 0.5.2x) and asserts a 200, retrying for two minutes, then logs
"Initialization failed. warmup error" and kills the server. ``requests`` takes
``HTTP_PROXY``/``HTTPS_PROXY``/``ALL_PROXY`` from the environment, so where a proxy is set and
``NO_PROXY`` does not name the address the warmup asks (``--host``; ``0.0.0.0`` itself before
0.5.2x's ``url()`` mapped it to 127.0.0.1), the proxy answers instead: a 502 or 503 with no body,
a 403 page of its own, and the server is killed though it started. The log shows it as the
warmup's assertion (``AssertionError: res=<Response [502]>, res.text=''``) or, with debug
logging, as urllib3's request line in proxy form (``"GET http://0.0.0.0:25600/get_model_info
HTTP/1.1" 403``: an absolute URL is what a client sends a proxy).
"""

from __future__ import annotations

import re

from patcher.advice.log_rules import Fix, LogContext

# SGLang's warmup assertion, with the status its request got
WARMUP_REFUSED = re.compile(r"AssertionError: res=<Response \[(\d{3})\]>")
# urllib3's debug line of a request sent to a proxy (the target as an absolute URL), refused
PROXIED_REQUEST = re.compile(
    r'"GET http://([^/\s"]+)/(?:get_model_info|model_info|health|v1/models)\S* HTTP/1\.1" '
    r"((?!200)\d{3})"
)
_EXEMPT = "localhost,127.0.0.1,0.0.0.0"


def _fixes(host: str | None) -> list[Fix]:
    exempt = (
        _EXEMPT if host in (None, "localhost", "127.0.0.1", "0.0.0.0") else (f"{_EXEMPT},{host}")
    )
    return [
        Fix(
            "env",
            f"NO_PROXY={exempt} no_proxy={exempt}",
            note="for the server's process: its own address is reached directly, not through "
            "the proxy HTTP_PROXY/HTTPS_PROXY/ALL_PROXY name (requests reads both spellings)",
        ),
        Fix(
            "advice",
            "or unset http_proxy https_proxy all_proxy (and their upper-case names) for the "
            "server; set them again only where downloads need them",
        ),
    ]


def warmup_refused(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """SGLang's warmup got another status than 200 from its own address."""
    status = m.group(1)
    said = m.string[m.end() :]
    page = re.search(r"res\.text='([^']{1,80})", said)
    body = f" (its answer: {page.group(1).strip()[:60]!r})" if page and page.group(1) else ""
    return (
        f"the server started, but its warmup request to its own address got HTTP {status}"
        f"{body}: another server answered for it, an HTTP proxy from the environment that "
        "cannot reach the server's address",
        _fixes(None),
    )


def proxied_request(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """urllib3 sent the server's request to itself to a proxy (an absolute-form request)."""
    target, status = m.group(1), m.group(2)
    host = target.rsplit(":", 1)[0].strip("[]")
    return (
        f"the server's request to its own address ({target}) went through an HTTP proxy, "
        f"which answered {status}: NO_PROXY does not name that address",
        _fixes(host),
    )
