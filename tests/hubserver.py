"""A small Hugging Face Hub on 127.0.0.1 for tests: the file (resolve) and API endpoints that
``huggingface_hub`` uses to download, with the real headers and error codes.

Repositories are dicts: ``{"refs": {"main": COMMIT}, "commits": {COMMIT: {path: bytes}},
"gated": bool}``. Started and stopped by the tests themselves; nothing leaves the machine.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TOKEN = "hf_test_token"


def git_sha1(data: bytes) -> str:
    """The Hub's ETag of a regular (non-LFS) file: its git blob id."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class Hub:
    repos: dict[str, dict[str, Any]] = field(default_factory=dict)
    delay: float = 0.0
    requests: list[str] = field(default_factory=list)

    def add_repo(
        self,
        repo_id: str,
        files: dict[str, bytes],
        *,
        commit: str | None = None,
        ref: str = "main",
        gated: bool = False,
    ) -> str:
        """Add a commit (and point ``ref`` at it); returns the 40-hex commit id."""
        repo = self.repos.setdefault(repo_id, {"refs": {}, "commits": {}, "gated": gated})
        commit = (
            commit
            or hashlib.sha1(
                repo_id.encode()
                + json.dumps(sorted(files)).encode()
                + str(len(repo["commits"])).encode()
            ).hexdigest()
        )
        repo["commits"][commit] = dict(files)
        repo["refs"][ref] = commit
        return commit


def _handler(hub: Hub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_: Any) -> None:
            pass

        def _error(self, status: int, code: str, message: str, commit: str | None = None) -> None:
            self.send_response(status)
            self.send_header("X-Error-Code", code)
            self.send_header("X-Error-Message", message)
            if commit:
                self.send_header("X-Repo-Commit", commit)
            body = json.dumps({"error": message}).encode()
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _json(self, payload: Any) -> None:
            body = json.dumps(payload).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _repo(self, repo_id: str) -> dict[str, Any] | None:
            repo = hub.repos.get(repo_id)
            if repo is None:
                self._error(401, "RepoNotFound", f"Repository Not Found for url: {repo_id}")
                return None
            if repo["gated"] and self.headers.get("Authorization") != f"Bearer {TOKEN}":
                self._error(401, "GatedRepo", f"Access to model {repo_id} is restricted.")
                return None
            return repo

        def _commit(self, repo: dict[str, Any], revision: str) -> str | None:
            revision = urllib.parse.unquote(revision)
            if revision in repo["commits"]:
                return revision
            commit = repo["refs"].get(revision)
            if commit is None:
                self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
            return commit

        def _resolve(self) -> None:
            hub.requests.append(f"{self.command} {self.path}")
            if hub.delay:
                time.sleep(hub.delay)
            path = urllib.parse.urlparse(self.path).path
            if path.startswith("/api/models/"):
                self._api(path[len("/api/models/") :])
                return
            parts = path.lstrip("/").split("/")
            if len(parts) < 5 or parts[2] != "resolve":
                self._error(404, "EntryNotFound", "unknown endpoint")
                return
            repo_id, revision = f"{parts[0]}/{parts[1]}", parts[3]
            filename = urllib.parse.unquote("/".join(parts[4:]))
            repo = self._repo(repo_id)
            if repo is None:
                return
            commit = self._commit(repo, revision)
            if commit is None:
                return
            files = repo["commits"][commit]
            if filename not in files:
                self._error(404, "EntryNotFound", f"{filename} does not exist", commit)
                return
            data = files[filename]
            self.send_response(200)
            self.send_header("X-Repo-Commit", commit)
            self.send_header("ETag", f'"{git_sha1(data)}"')
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Content-Type", "application/octet-stream")
            self.end_headers()
            if self.command == "GET":
                self.wfile.write(data)

        def _api(self, rest: str) -> None:
            parts = rest.split("/")
            repo_id = f"{parts[0]}/{parts[1]}"
            repo = self._repo(repo_id)
            if repo is None:
                return
            kind = parts[2] if len(parts) > 2 else "revision"
            revision = parts[3] if len(parts) > 3 else "main"
            commit = self._commit(repo, revision)
            if commit is None:
                return
            files = repo["commits"][commit]
            if kind == "tree":
                self._json(
                    [
                        {"type": "file", "path": p, "size": len(d), "oid": git_sha1(d)}
                        for p, d in sorted(files.items())
                    ]
                )
                return
            self._json(
                {
                    "id": repo_id,
                    "sha": commit,
                    "private": False,
                    "siblings": [
                        {"rfilename": p, "size": len(d), "blobId": git_sha1(d)}
                        for p, d in sorted(files.items())
                    ],
                }
            )

        do_GET = _resolve
        do_HEAD = _resolve

    return Handler


@contextmanager
def serve(hub: Hub) -> Iterator[str]:
    """Run ``hub`` on 127.0.0.1 (a free port) for the duration; yields the endpoint URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(hub))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
