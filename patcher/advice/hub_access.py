"""doctor's answers when the checkpoint's files could not be had from the Hugging Face Hub: a
gated or private repository without a token that may read it, a name or revision the Hub does
not have, no network and no copy in the cache, a cache the server may not write.

Two sources say so, in their own words: transformers' ``utils/hub.py`` (read per release into
the catalogue: "You are trying to access a gated repo", "is not a valid model identifier",
"We couldn't connect to ... couldn't find it in the cached files", "is not a valid git
identifier"), and huggingface_hub's own errors, which the engines let out whole under their
class names (``huggingface_hub/errors.py``: ``GatedRepoError``, ``RepositoryNotFoundError``,
``RevisionNotFoundError``, ``LocalEntryNotFoundError``; ``utils/_http.py`` words them)."""

from __future__ import annotations

import re

from patcher.advice.catalogue import Matched
from patcher.advice.log_rules import Fix, LogContext, Rule
from patcher.advice.unknown_weights import mistral_formats

# The repository a message names: a Hub URL's, or the name transformers quotes first.
_REPO_URL = re.compile(r"huggingface\.co/(?:api/models/)?([\w.-]+/[\w.-]+)")
_TOKEN = Fix(
    "env",
    "HF_TOKEN=hf_...",
    note="a token of an account the repository has granted (huggingface.co/settings/tokens); "
    "or hf auth login on the machine the server runs on",
)


def _repo(line: str) -> str:
    found = _REPO_URL.search(line)
    if found is not None and found.group(1) != "settings/tokens":
        return found.group(1).removesuffix(".git")
    named = re.search(
        r"'([\w.-]+/[\w.-]+)'|(?<![/\w.-])([\w.-]+/[\w.-]+) (?:is not a local folder|is a gated "
        r"repository|does not appear)",
        line,
    )
    return (named.group(1) or named.group(2)) if named else "REPO"


def _answer(line: str, ctx: LogContext) -> tuple[str, list[Fix]] | None:
    """The answer for a line in either source's words; None for a line that says none."""
    repo = _repo(line)
    if re.search(r"gated repo|GatedRepoError|is a gated repository", line):
        page = f"https://huggingface.co/{repo}" if repo != "REPO" else "the model's Hub page"
        return (
            f"{'the repository' if repo == 'REPO' else repo} is gated: the Hub serves its "
            "files only to an account granted access, with that account's token",
            [Fix("advice", f"request access on {page}"), _TOKEN],
        )
    if re.search(
        r"RepositoryNotFoundError|Repository Not Found|not a valid model identifier|"
        r"not a local folder or a valid repository name",
        line,
    ):
        return (
            f"the Hub has no repository {repo} that this token may read: a misspelt name, a "
            "local path that is not there (taken for a Hub name), or a private repository",
            [
                Fix(
                    "advice",
                    "the exact name from the model's page, or the local folder that holds "
                    "config.json (as the server sees it)",
                ),
                _TOKEN,
            ],
        )
    if re.search(r"RevisionNotFoundError|not a valid git identifier", line):
        return (
            "the --revision given is no branch, tag or commit of the repository",
            [Fix("advice", f"a revision listed at https://huggingface.co/{repo}/tree/main")],
        )
    if re.search(
        r"LocalEntryNotFoundError|outgoing traffic has been disabled|couldn't connect to|"
        r"couldn't find (?:it|them) in the cached files|connection error when trying to load",
        line,
    ):
        return (
            "the checkpoint's files are not in the Hub cache, and the Hub could not be reached "
            "(no network, or HF_HUB_OFFLINE=1)",
            [
                Fix(
                    "advice",
                    "download it where the Hub is reachable: hf download REPO --local-dir DIR; "
                    "then give DIR as the model",
                ),
                Fix(
                    "advice",
                    "or with the network up, leave HF_HUB_OFFLINE and TRANSFORMERS_OFFLINE "
                    "unset (or a proxy: HTTPS_PROXY, or HF_ENDPOINT for a mirror)",
                ),
            ],
        )
    lacks = re.search(r"does not appear to have a file named ([\w./-]+?)\.?(?:\s|$)", line)
    if lacks is not None:
        named = lacks.group(1)
        if named == "config.json":
            mistral = mistral_formats(ctx, "for a folder with params.json (Mistral's own format)")
            return (
                "the model folder or repository holds no config.json: not the checkpoint's own "
                "folder, or a checkpoint of another layout",
                [
                    Fix(
                        "advice",
                        "the folder that holds config.json (a Hub cache folder holds it under "
                        "snapshots/REVISION); a GGUF checkpoint is given as its .gguf file",
                    ),
                    *([] if mistral is None else [mistral]),
                ],
            )
        return (
            f"the checkpoint lacks {named}, which the engine reads: a download cut short, or a "
            "file left out",
            [Fix("advice", f"download it again: hf download {repo} {named} --local-dir DIR")],
        )
    if "Check cache directory permissions" in line:
        return (
            "the server may not write the Hub cache it downloads into",
            [
                Fix(
                    "advice",
                    "HF_HOME set to a cache folder the server's user owns (or fix the folder's "
                    "owner)",
                )
            ],
        )
    return None


def explain_hub(m: Matched, ctx: LogContext) -> tuple[str, list[Fix]]:
    """A catalogue message of transformers' hub.py (see the module's docstring)."""
    answered = _answer(m.line, ctx) or _answer(m.template.text, ctx)
    if answered is not None:
        return answered
    return (
        "the checkpoint's files could not be had from the Hub or the cache",
        [Fix("advice", "the model name or path as the server sees it; hf download it first")],
    )


def hub_error(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """huggingface_hub's own error, by its class name."""
    return _answer(m.string, ctx) or ("", [])


# huggingface_hub's own errors, let out whole by the engines (engine_rules.RULES takes them).
HUB_RULES: tuple[Rule, ...] = (
    (
        "hub-access",
        re.compile(
            r"huggingface_hub\.(?:utils\._errors|errors)\.(?:GatedRepoError|"
            r"RepositoryNotFoundError|RevisionNotFoundError|LocalEntryNotFoundError)"
        ),
        hub_error,
    ),
)
HUB_MARKERS = ("huggingface_hub",)
