"""The catalogue of security concerns a reviewer wants told about, whatever the project.

Owns the concerns (authentication headers, cookies and sessions, TLS verification, credentials,
path joining and traversal, escaping and templating, signing and keys, deserialisation, subprocess
and SQL construction, redirects and origins, HTTP message framing, limits on untrusted input,
prototype pollution) and how each is recognised: words in a symbol's name, terms in the changed
code, and calls the symbol makes, per language where the spelling differs. Data and matching only:
no git, no findings.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache, lru_cache

ALL = ""  # key of the calls every language shares


@dataclass(frozen=True)
class Concern:
    """One kind of security-sensitive logic.

    ``strong`` terms in changed code are enough on their own; ``weak`` terms count only with
    support (a name word, a strong call, or a second weak term); ``names`` are words of a
    symbol's qualified name that place any change of its logic in the concern; ``calls`` are
    dotted call names (or their last parts) that mark a symbol as doing this work.
    ``context`` words, when set, must appear in the symbol's qualified name for the concern to
    apply at all (a ``max_`` limit matters in a parser, not in a retry policy).
    """

    id: str
    title: str
    # What goes wrong when this logic is wrong, said to the reviewer in the finding.
    stakes: str = ""
    strong: tuple[str, ...] = ()
    weak: tuple[str, ...] = ()
    names: frozenset[str] = frozenset()
    name_patterns: tuple[str, ...] = ()
    calls: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    context: frozenset[str] = frozenset()
    # Strong terms that are evidence only where the symbol's file path or name places the code
    # among messages read from outside (a word of either starting with one of ``placed_by``):
    # ``prefix.lstrip('\r\n')`` in a code formatter's comment handling (black a51a0be7) is text
    # tidying; the same call in a multipart parser (werkzeug b1916c0c) is framing.
    placed: tuple[str, ...] = ()
    placed_by: tuple[str, ...] = ()
    # How the concern is recognised when no term, name or call does it (said on the docs page).
    detected: str = ""


# A line ending in code: framing evidence where the code reads messages (see ``WIRE_WORDS``).
LINE_ENDINGS = r"\\r\\n|\\r|b[\"']\\n[\"']"
# Starts of the words of a path or a name that place code among messages from outside: HTTP and
# mail, their parsers and connections, and the output of version control a tool parses (pip
# ca832b28, CVE-2021-3572: ``git show-ref`` output split on unicode separators). ``http`` counts
# inside a word too (``aiohttp``, ``httputil``).
WIRE_WORDS = (
    "http",
    "multipart",
    "mime",
    "header",
    "request",
    "response",
    "wsgi",
    "asgi",
    "protocol",
    "message",
    "chunk",
    "boundary",
    "socket",
    "stream",
    "mail",
    "smtp",
    "imap",
    "cookie",
    "url",
    "websocket",
    "proxy",
    "formparser",
    "connection",
    "client",
    "server",
    "git",
    "vcs",
)


def placed_among(where: frozenset[str], stems: tuple[str, ...]) -> bool:
    """A word of ``where`` starts with one of ``stems`` (``http`` may sit inside a word)."""
    return any(w.startswith(stems) or ("http" in stems and "http" in w) for w in where)


_PATH_SPLIT = re.compile(r"[/\\._\-]+")


def path_words(path: str) -> frozenset[str]:
    """Lower-case words of a file path: ``src/werkzeug/sansio/multipart.py`` -> src, werkzeug, ..."""
    out: set[str] = set()
    for part in _PATH_SPLIT.split(path):
        if part:
            out.add(part.lower())
            out.update(w.lower() for w in _SPLIT.findall(part))
    return frozenset(out)


CONCERNS: tuple[Concern, ...] = (
    Concern(
        "auth-headers",
        "authentication headers",
        stakes="credentials can reach another host, or a request can pass without them",
        strong=(
            r"\bproxy[-_]authorization\b",
            r"\bauthorization\b",
            r"\bwww[-_]authenticate\b",
            r"\bbearer\b",
            r"\bremove_headers_on_redirect\b",
            r"\bauth_(?:username|password|header|mode)\b",
        ),
        weak=(r"\bauth\b", r"\bbasic\b", r"\bdigest\b"),
        # Authentication *state* is as much the concern as the header: ``_ensure_authed``,
        # ``is_authenticated``, an SSH ``userauth`` handler.
        names=frozenset(
            {
                "auth",
                "authed",
                "authenticated",
                "authorization",
                "authenticate",
                "authentication",
                "authorize",
                "login",
                "unauthenticated",
                "userauth",
            }
        ),
    ),
    Concern(
        "cookies",
        "cookies and session flags",
        stakes="a session cookie can be stolen, forged or sent where it should not go",
        strong=(
            r"\bset[-_]cookie\b",
            r"\bsamesite\b",
            r"\bhttponly\b",
            r"\bcsrf\w*",
            r"\bxsrf\w*",
            r"\bsession_?(?:cookie|id|key)\w*",
            r"__host-|__secure-",
        ),
        weak=(r"\bcookies?\b", r"\bsecure\b", r"\bmax_age\b", r"\bexpires\b", r"\bdomain\b"),
        names=frozenset({"cookie", "cookies", "csrf", "xsrf"}),
    ),
    Concern(
        "tls",
        "TLS verification",
        stakes="a connection can accept a forged certificate",
        strong=(
            r"\bcheck_hostname\b",
            r"\bcert_reqs\b",
            r"\bcert_(?:none|required|optional)\b",
            r"\bverify_mode\b",
            r"\bassert_(?:hostname|fingerprint)\b",
            r"\bca_certs?\b",
            r"\bcafile\b",
            r"\bcapath\b",
            r"\bssl_context\b",
            r"\bsslcontext\b",
            r"\binsecureskipverify\b",
            r"\brejectunauthorized\b",
            r"\bverify_ssl\b",
            r"\bmatch_hostname\b",
        ),
        weak=(r"\bssl\b", r"\btls\b", r"\bcert\w*", r"\bverify\b", r"\bfingerprint\b", r"\bhostname\b"),
        names=frozenset({"ssl", "tls", "cert", "certs", "certificate", "hostname", "https"}),
        calls={
            "python": (
                "ssl.create_default_context",
                "ssl.SSLContext",
                "wrap_socket",
                "load_verify_locations",
            ),
            "js": ("tls.connect", "tls.createSecureContext"),
            "go": ("tls.Dial", "tls.Config"),
        },
    ),
    Concern(
        "credentials",
        "credentials and netrc",
        stakes="a password or token can leak or be sent to the wrong host",
        strong=(
            r"\bnetrc\b",
            r"\bpasswd\b",
            r"\bpassword\w*",
            r"\bcredentials?\b",
            r"\bapi_?key\b",
            r"\baccess_?token\b",
            r"\bauth_?token\b",
            r"\bgetpass\b",
            r"\bkeyring\b",
            r"\buserinfo\b",
        ),
        weak=(r"\busername\b", r"\bsecret\b", r"\btoken\b", r"\bauth\b", r"@"),
        names=frozenset({"netrc", "password", "passwords", "credential", "credentials", "passwd"}),
        calls={"python": ("netrc.netrc", "getpass.getpass")},
    ),
    Concern(
        "paths",
        "path joining and traversal",
        stakes="a request can read or write files outside the directory meant",
        strong=(
            r"\bnormpath\b",
            r"\brealpath\b",
            r"\babspath\b",
            r"\bisabs\b",
            r"\bcommonpath\b",
            r"\brelative_to\b",
            r"\bsafe_join\b",
            r"\bsecure_filename\b",
            r"\bsymlinks?\b",
            r"\bfollow_symlinks\b",
            r"\bislink\b",
            r"\blstat\b",
            r"\bs_isreg\b",
            r"\baltsep\b",
            r"\btraversal\b",
            r"\.\.[/\\]|['\"]\.\.['\"]",
        ),
        weak=(
            r"\bos\.path\b",
            r"\bfilename\b",
            r"\bfilepath\b",
            r"\bdirectory\b",
            r"\bresolve\b",
            r"\bsep\b",
        ),
        names=frozenset({"traversal", "symlink", "symlinks"}),
        name_patterns=(
            r"(safe|secure|sanitiz)\w*_?(join|path|filename|name)",
            r"(validate|check|resolve)\w*_?(absolute_)?path",
            r"static\w*\.(\w*path\w*|_?handle)",
        ),
        calls={
            ALL: ("os.path.normpath", "os.path.realpath", "os.path.abspath", "relative_to", "safe_join"),
            "js": ("path.normalize", "path.resolve"),
            "go": ("filepath.Clean", "filepath.Rel"),
        },
    ),
    Concern(
        "escaping",
        "escaping and templating",
        stakes="user text can run as markup, script or template code",
        strong=(
            r"\bx?html_?escape\b",
            r"(?<!re\.)\bescape\w*",
            r"\bautoescape\b",
            r"\bmarkup\b",
            r"\bsandbox\w*",
            r"\bunsafe\w*",
            r"\bis_safe_\w+",
            r"\bsanitiz\w*",
            r"\bxss\b",
            r"\b__html__\b",
            r"\bformat_map\b",
            r"\binnerhtml\b",
            r"\bdangerouslysetinnerhtml\b",
        ),
        # ``<`` inside a string literal (markup being built), not a comparison (werkzeug e1236268:
        # ``if sys.version_info < (3, 13):`` beside a call to ``escape`` was "escaping").
        weak=(r"\bhtml\b", r"\bquote\w*", r"\bsafe\b", r"\battr\w*", r"[\"'][^\"'\n]*<"),
        names=frozenset(
            {"escape", "autoescape", "sandbox", "sandboxed", "sanitize", "xss", "markup", "xmlattr"}
        ),
        calls={
            ALL: ("escape", "html.escape", "markupsafe.escape", "xhtml_escape", "html_escape", "Markup"),
            "js": ("escapeHtml", "encodeURIComponent", "DOMPurify.sanitize"),
            "go": ("html.EscapeString", "template.HTMLEscapeString"),
        },
    ),
    Concern(
        "signing",
        "signing and keys",
        stakes="forged or tampered data can pass as signed, or a key can leak",
        strong=(
            r"\bhmac\b",
            r"\bcompare_digest\b",
            r"\bconstant_time\w*",
            r"\btimingsafeequal\b",
            # Not Python's introspection (``inspect.signature(func)``, ``from inspect import
            # signature``): a function's parameters, nothing signed.
            r"(?<!inspect\.)(?<!import )\bsignature(?!\s*\()\w*",
            r"\bsecret_?key\w*",
            r"\bprivate_?key\b",
            r"\bpublic_?key\b",
            r"\bpbkdf2\w*",
            r"\bbcrypt\b",
            r"\bscrypt\b",
            r"\bargon2\b",
            r"\bsalt\b",
            r"\bnonce\b",
            r"\bjwt\b|\bjws\b|\bjwk\b",
            r"\balgorithms?\b",
            r"\bverify_signature\b",
            r"\bpem\b",
        ),
        weak=(
            r"\bsign\w*",
            r"\bdigest\b",
            r"\bkey\b",
            r"\bsecret\b",
            r"\biterations\b",
            r"\biss\b",
            r"\baud\b",
        ),
        # Key exchange (``kex``) is where a protocol agrees on its keys: a change there is a change
        # to what protects the session.
        names=frozenset(
            {"sign", "signer", "signature", "hmac", "jwt", "jws", "jwk", "encrypt", "decrypt", "kex"}
        ),
        name_patterns=(
            r"(prepare|load|verify|rotate|derive|generate|get)_?(private_|public_|secret_|signing_)?key",
            # Reading, writing or decrypting a private key file, whatever the verb.
            r"private_?key",
            r"key_?exchange",
            r"_?validate_(iss|aud|exp|nbf|iat|claims?)",
            r"verify\w*",
        ),
        calls={
            "python": ("hmac.new", "hmac.compare_digest", "secrets.compare_digest", "hashlib.pbkdf2_hmac"),
            "js": ("crypto.createHmac", "crypto.timingSafeEqual", "jwt.verify", "jwt.sign"),
            "go": ("hmac.New", "hmac.Equal", "subtle.ConstantTimeCompare"),
        },
    ),
    Concern(
        "deserialisation",
        "deserialisation",
        stakes="untrusted data can build arbitrary objects and run code",
        strong=(
            r"\bpickle\b",
            r"\bunpickl\w*",
            r"\bmarshal\b",
            r"\byaml\.(?:unsafe_)?load\b",
            r"\bfullloader\b|\bunsafeloader\b",
            r"\bjsonpickle\b",
            r"\bshelve\b",
            r"\bunserializ\w*",
            r"\b__reduce(?:_ex)?__\b",
        ),
        # ``deserialize`` alone is what every schema and JSON library does; the danger is in the
        # loaders that build arbitrary objects (pickle, marshal, unsafe YAML), named above.
        weak=(r"\bdeserializ\w*", r"\bloads?\b"),
        names=frozenset({"pickle", "unpickle", "unserialize"}),
        calls={
            "python": ("pickle.loads", "pickle.load", "marshal.loads", "yaml.load", "yaml.unsafe_load"),
            "js": ("unserialize", "node-serialize.unserialize"),
        },
    ),
    Concern(
        "prototype",
        "prototype pollution",
        stakes="a crafted key can change every object's behaviour",
        # JavaScript objects built from untrusted keys (a query string, a JSON body, a deep
        # merge): a key ``__proto__`` reaches every object's prototype (express 2f64f68c,
        # CVE-2024-51999: qs.parse's ``allowPrototypes`` for ``plainObjects``).
        strong=(
            r"\b__proto__\b",
            r"\ballowprototypes\b",
            r"\bplainobjects\b",
            r"\bprototype[ _-]?pollut\w*",
            r"\bobject\.create\(\s*null\s*\)",
        ),
        weak=(r"\bhasownproperty\b", r"\bobject\.hasown\b", r"\bprototype\b"),
    ),
    Concern(
        "subprocess",
        "subprocess and shell commands",
        stakes="input can run a command or slip in an option",
        strong=(
            r"\bsubprocess\b",
            r"\bshell\s*=\s*true\b",
            r"\bos\.system\b",
            r"\bpopen\b",
            r"\bshlex\.(?:quote|split|join)\b",
            r"\bchild_process\b",
            # ``exec(`` called bare or through os or child_process; a method ``exec`` on anything
            # else is JavaScript's ``RegExp.prototype.exec`` (``/(\w+):/.exec(s)``).
            r"(?<![\w$\])/]\.)\bexecv?p?e?\b\s*\(",
            r"\b(?:os|cp|child_?process|childprocess)\.exec\w*\s*\(",
            # A command-line option built around a value (``f"--rev={rev}"``): where an argument
            # that starts with ``-`` would otherwise be read as an option (argument injection), or
            # an option and its one value alone in a list (``["-r", rev]``).
            r"\bf[\"']--?[a-z][\w-]*=\{",
            r"\[\s*[\"']--?[a-z][\w-]*[\"']\s*,\s*[a-z_]\w*\s*\]",
        ),
        names=frozenset({"subprocess", "shell", "popen"}),
        calls={
            "python": (
                "subprocess.run",
                "subprocess.Popen",
                "subprocess.call",
                "subprocess.check_output",
                "os.system",
            ),
            "js": ("child_process.exec", "child_process.spawn", "child_process.execSync"),
            "go": ("exec.Command",),
        },
    ),
    Concern(
        "sql",
        "SQL construction",
        stakes="input can change the query (SQL injection)",
        strong=(
            r"\bexecute(?:many)?\s*\(\s*f?[\"'].*(?:%s|\{|\+)",
            r"\bquote_name\b",
            r"\braw_?sql\b",
            r"\bescape_string\b",
            r"\bselect\b.*\bfrom\b.*(?:%|\{|\+)",
            r"\binsert\s+into\b",
            r"\bwhere\b.*(?:%s|\{\w*\}|\+\s*\w)",
        ),
        weak=(r"\bsql\b", r"\bcursor\b", r"\bexecute\b", r"\braw\b", r"\bparams\b"),
        names=frozenset({"sql", "rawsql", "quote_name"}),
    ),
    Concern(
        "redirects",
        "redirects and origins",
        stakes="users or credentials can be sent to another origin",
        strong=(
            r"\bredirect\w*",
            r"\bis_same_host\b",
            r"\bsame_?origin\b",
            r"\bcross[-_]?origin\b",
            r"\btrusted_hosts?\b",
            r"\ballowed_hosts\b",
            r"\bcheck_origin\b",
            r"\baccess-control-allow-\w+",
            r"\bopen redirect\b",
        ),
        weak=(r"\blocation\b", r"\bnetloc\b", r"\borigin\b", r"\bhost\b", r"\bretries\b", r"[\"']//"),
        names=frozenset({"redirect", "redirects", "origin", "cors"}),
        # What decides whether a URL stays on the host meant: ``isAbsoluteURL`` taking ``//host``
        # for a path sent axios to another host (axios 07a661a2, CVE-2024-39338, SSRF); an origin is
        # its scheme too (node-fetch e87b093f: ``isSameProtocol`` keeps credentials off https->http).
        name_patterns=(
            r"(is|has)_?(absolute|relative|same|safe|allowed|local)_?(url|uri|origin|host|protocol|scheme)",
        ),
    ),
    Concern(
        "framing",
        "HTTP message framing and header injection",
        stakes="requests can be smuggled or headers injected",
        strong=(
            r"\bcontent[-_]length\b",
            r"\btransfer[-_]encoding\b",
            # A chunk's length or extensions as chunked encoding frames them; a chunk *size* is
            # how much a stream reads at a time (``iter_content(chunk_size)``, axios's
            # ``readBytes(stream, chunkSize)``), a supporting term below.
            r"\bchunk[-_ ]?(?:extensions?|len|length)\b",
            r"\bcrlf\b",
            LINE_ENDINGS,
            r"\bcontrol[_ ]char\w*",
            r"\bnon-token\b",
            r"\bsmuggl\w*",
            r"\bheader injection\b",
            r"\bbadhttpmessage\b",
            r"\bhttpinputerror\b",
            r"\breason_phrase\b",
        ),
        weak=(
            r"\bchunked\b",
            r"\bchunk[-_ ]?size\b",
            r"\bheaders?\b",
            r"\bmethod\b",
            r"\bstatus_?line\b",
            r"\bnewline\b",
        ),
        names=frozenset({"chunked", "crlf", "framing"}),
        name_patterns=(
            r"(parse|read|write|feed)_?(headers?|chunk\w*|body|request_line|status_line|message)\b",
        ),
        placed=(LINE_ENDINGS,),
        placed_by=WIRE_WORDS,
    ),
    Concern(
        "limits",
        "limits on untrusted input",
        stakes="untrusted input can exhaust memory or CPU (denial of service)",
        strong=(
            # Private spellings (``self._max_mem_size``) are limits too.
            r"\b_*max_\w+",
            r"\b\w+_max\b",
            r"\b\w*limit\w*",
            r"\btoo_?large\b|\btoolarge\b|\btoo many\b|\bexceed\w*",
            r"\bentitytoolarge\w*|\brequestentitytoolarge\b|\b413\b",
            r"\bdecompression bomb\b|\bzip bomb\b",
        ),
        names=frozenset(),
        context=frozenset(
            {
                "parse",
                "parser",
                "decode",
                "decoder",
                "multipart",
                "form",
                "formparser",
                "feed",
                "body",
                "chunk",
                "chunked",
                "unquote",
                "stream",
                "decompress",
                "inflate",
                "read",
                "receive",
                "recv",
                "headers",
                "header",
                "cookie",
                "upload",
            }
        ),
    ),
    Concern(
        "redos",
        "regular expressions that backtrack",
        stakes="a crafted input can keep the expression busy for seconds or minutes (ReDoS, denial of service)",
        detected=(
            "a pattern the change removes or rewrites (a JavaScript `/.../` literal or `RegExp(...)`, the "
            "pattern of a Python `re` call) that backtracks super-linearly: a repeated group whose body is "
            "one repeated item and optional parts or characters that item matches too (`(a+)+`, "
            "`(\\w+\\s?)*`, `(.+\\.)*`), or a branch not anchored at "
            "the start that is one repeated item before `$` (`\\s*$`, `\\/+$`); evidence only when no "
            "pattern the change adds keeps that part (engine/review/regexes.py)"
        ),
    ),
)

# Escapers of a terminal's markup (Rich's ``[magenta]…[/]``): they keep a URL from being read as
# a style, on the user's own console; no browser, shell or query reads their output. Matched by
# their dotted end, so vendored copies (``pip._vendor.rich.markup.escape``) count too.
DISPLAY_ESCAPERS = ("rich.markup.escape", "textual.markup.escape")


_SPLIT = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


@lru_cache(maxsize=65536)
def name_words(qualified: str) -> frozenset[str]:
    """Lower-case words of a qualified name: ``MultipartDecoder.next_event`` -> multipart, decoder, ..."""
    words: set[str] = set()
    for part in re.split(r"[._\-$:]+", qualified):
        if not part:
            continue
        words.add(part.lower())
        words.update(w.lower() for w in _SPLIT.findall(part))
    return frozenset(words)


@dataclass(frozen=True)
class Match:
    """Why a change touches one concern; ``evidence`` says what, for the reviewer."""

    concern: Concern
    evidence: tuple[str, ...]
    strength: int
    # A strong term of the changed code is among the evidence (else the name, calls or weak
    # terms only: the finding then quotes the change itself).
    from_code: bool = True


@cache
def _compiled(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p, re.IGNORECASE) for p in patterns)


# A pattern's leading literal (``\bsignature…`` -> ``signature``) shorter than this is not worth
# a look-up before the regular expression.
MIN_PREFILTER_LITERAL = 3
_LEADING_LITERAL = re.compile(r"^(?:\(\?<!(?:[^()\\]|\\.)*\))*(?:\\b)?([a-z0-9_]+)")


@cache
def _leading_literal(pattern: str) -> str | None:
    """The literal every match of ``pattern`` starts with, lower-case, or None when there is no
    such literal (a top-level alternation, a character class or a quantified first character)."""
    depth = 0
    escaped = False
    for ch in pattern:  # a top-level ``|`` means no single literal is required
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "|" and depth == 0:
            return None
    m = _LEADING_LITERAL.match(pattern)
    if m is None:
        return None
    literal = m.group(1)
    rest = pattern[m.end() :]
    if rest[:1] in ("?", "*", "{"):
        literal = literal[:-1]  # ``execv?`` requires ``exec`` only
    return literal if len(literal) >= MIN_PREFILTER_LITERAL else None


def _hits(
    patterns: tuple[str, ...], text: str, confirm: str | None = None, lowered: str | None = None
) -> list[str]:
    """The terms of ``patterns`` found in ``text`` (and in ``confirm`` when given). ``lowered``
    (``text.lower()`` of an ASCII text) lets a pattern whose leading literal is absent be skipped
    without running it: most symbols match none of the catalogue, and the expressions were most of
    a large review's time. (Only for ASCII: case-insensitive matching folds ``ſ`` to ``s``.)"""
    out: list[str] = []
    for raw, pattern in zip(patterns, _compiled(patterns), strict=True):
        if lowered is not None and (literal := _leading_literal(raw)) is not None and literal not in lowered:
            continue
        m = pattern.search(text)
        if m is not None and (confirm is None or pattern.search(confirm) is not None):
            out.append(m.group(0).strip()[:40])
    return out


def _call_hits(concern: Concern, family: str, calls: Iterable[str]) -> list[str]:
    wanted = (*concern.calls.get(ALL, ()), *concern.calls.get(family, ()))
    if not wanted:
        return []
    out = []
    for call in calls:
        last = call.rsplit(".", 1)[-1]
        for w in wanted:
            if call == w or call.endswith("." + w) or ("." not in w and last == w):
                out.append(call)
                break
    return out


# Two terms that share this many characters are two cuts of one piece of code (``execute("SELECT
# * FROM users WHERE name `` and ``SELECT * FROM users WHERE name = '" + na``): shown once.
SAME_TEXT_CHARS = 12


def _distinct(terms: Iterable[str]) -> list[str]:
    """The terms in order, without one that repeats (in part) the text of a term already kept."""
    from difflib import SequenceMatcher

    kept: list[str] = []
    for term in dict.fromkeys(terms):
        if any(
            SequenceMatcher(None, k, term, autojunk=False).find_longest_match().size
            >= min(SAME_TEXT_CHARS, len(term))
            for k in kept
        ):
            continue
        kept.append(term)
    return kept


def match(
    qualified: str,
    changed_code: str,
    calls: Iterable[str],
    family: str,
    *,
    removed_code: str = "",
    confirm: str | None = None,
    strong_only: bool = False,
    path: str = "",
) -> list[Match]:
    """The concerns a logic change of ``qualified`` touches, strongest first.

    ``changed_code`` is the text of the lines the change adds (comments and docstrings removed),
    ``removed_code`` the text of the lines it removes; ``calls`` the symbol's calls after the
    change, dotted and alias-resolved. ``confirm``, when given, is the change as normalized
    statements (annotations, layout and import spelling gone): a term counts only if it is there
    too, so a line that was merely re-annotated or re-wrapped is no evidence. ``strong_only``:
    only a strong term will do (a change to a signature alone says nothing about the body that
    enforces the concern). ``path``, the symbol's file, places it for the terms a concern only
    counts in some places (``Concern.placed``).
    """
    words = name_words(qualified)
    where = words | path_words(path)
    lowered = qualified.lower()
    code = f"{changed_code}\n{removed_code}"
    if confirm is not None and not confirm.strip():
        return []
    code_lower = code.lower() if code.isascii() else None
    calls = tuple(calls)
    out: list[Match] = []
    for concern in CONCERNS:
        if concern.context and not (words & concern.context):
            continue
        strong_terms = concern.strong
        if concern.placed and not placed_among(where, concern.placed_by):
            strong_terms = tuple(p for p in strong_terms if p not in concern.placed)
        strong = _hits(strong_terms, code, confirm, code_lower)
        weak = _hits(concern.weak, code, confirm, code_lower) if concern.weak else []
        named = (
            sorted(words & concern.names)
            + [p for p in concern.name_patterns if re.search(p, lowered) is not None][:1]
        )
        called = _call_hits(concern, family, calls)
        strength = 3 * len(strong) + 2 * bool(named) + bool(called) + (len(weak) >= 2)
        supported = bool(strong) or (bool(named) and bool(code.strip())) or (bool(called) and bool(weak))
        if not supported or (strong_only and not strong):
            continue
        evidence = [f"`{t}`" for t in _distinct(strong)]
        if named:
            # Which word of the name: "its name" alone left the reader guessing.
            word = named[0] if named[0] in words else re.search(named[0], lowered)
            said = word if isinstance(word, str) else (word.group(0) if word else "")
            if said.lower() not in {t.lower() for t in strong}:  # not "`redirect`, its name (`redirect`)"
                evidence.append(f"its name (`{said}`)" if said else "its name")
        shown = {t.strip("`") for t in evidence}
        evidence.extend(
            f"calls `{c}`" for c in dict.fromkeys(called) if c not in shown
        )  # not "`os.system`, calls `os.system`"
        if not strong:
            evidence.extend(f"`{t}`" for t in dict.fromkeys(weak))
        out.append(Match(concern, tuple(evidence[:4]), strength, from_code=bool(strong)))
    out.sort(key=lambda m: -m.strength)
    return out


REDOS = next(c for c in CONCERNS if c.id == "redos")


_PREDICATE = re.compile(r"^(?:is|has)(?:_|[A-Z])")


def named_concerns(qualified: str) -> tuple[Concern, ...]:
    """The concerns a word of a symbol's qualified name places it in (name words only: the looser
    name patterns, ``get_key``, need the symbol's own changed code to go with them, but for a
    predicate, ``isSameProtocol``, ``is_safe_url``: its name says what it checks)."""
    words = name_words(qualified)
    leaf = qualified.rsplit(".", 1)[-1]
    predicate = _PREDICATE.match(leaf) is not None
    return tuple(
        c
        for c in CONCERNS
        if (words & c.names or (predicate and any(re.search(p, leaf.lower()) for p in c.name_patterns)))
        and (not c.context or words & c.context)
    )


def _readable(pattern: str) -> str:
    """A regex as a reader would say it: ``\\bcheck_hostname\\b`` is ``check_hostname``."""
    text = re.sub(r"\(\?<!([^()]*)\)", r"(not after \1) ", pattern)
    text = re.sub(r"\(\?!((?:[^()]|\\\()*)\)", r" (not before \1)", text)
    text = text.replace("\\(", "(")
    text = text.replace("\\b", "").replace("(?:", "(").replace("\\w*", "…").replace("\\w+", "…")
    text = text.replace("\\.", ".").replace("\\s*", " ").replace("\\s+", " ")
    return re.sub(" {2,}", " ", text).replace("`", "'")


def render_catalogue() -> str:
    """The security-logic catalogue as Markdown (the second part of docs/risk.md)."""
    parts = [
        "## Security-sensitive logic (`semfora ci`)",
        "",
        "Besides new effects, `semfora ci` raises **security-sensitive logic changed** (`security`,",
        "medium, rule `security-logic`) when a change to a symbol's own logic touches one of these",
        "concerns. The evidence is read from the lines the change adds or removes inside the symbol",
        "(comments, docstrings, annotation-only lines, TypeScript lines that only changed their",
        "type assertions (`x as T`, `x!`), lines that only changed letter case, lines",
        "that only swap a name the change renames throughout the file (`this._internals` to",
        "`this.#internals` on two lines or more) and lines merely moved from elsewhere in the change",
        "are left out), from words of the symbol's",
        "qualified name, and from the calls it makes. A **strong** term in the changed code is enough;",
        "a **supporting** term counts only together with a name word, a call or a second supporting",
        "term; a **name** word (or name pattern) counts for any change of the symbol's logic; and a",
        "call, in the changed code, to a function the same change adds and whose name words place it",
        "in a concern counts like a name word (the caller is where a new check takes effect). Changes",
        "that only rename locals, re-annotate, re-format or move code, or only touch imports, logging,",
        "message texts or import fallbacks (an `except` that gains or loses `ImportError`), raise",
        "nothing from their name alone, and tests, documentation and examples raise nothing at all.",
        'The text of a warning or a log line (`warnings.warn("...")`, `logger.info(...)`,',
        "`console.warn(...)`) is never evidence, whatever else the change does; a returned or raised",
        "string is code. An added symbol needs a strong term, but for a method that calls its base",
        "class's method of the same name (`super().get_redirect_target(resp)`): an override changes an",
        "existing operation, as an edit of it would.",
        "A call to a terminal's markup escaper ("
        + ", ".join(f"`{e}`" for e in DISPLAY_ESCAPERS)
        + ", vendored copies too) is no",
        "escaping evidence: it keeps a value from being read as a console style, and no browser,",
        "shell or query reads its output.",
        "This page part is generated from",
        "`engine/review/concerns.py` (`render_catalogue()`).",
        "",
    ]
    for c in CONCERNS:
        parts.append(f"### {c.title[0].upper()}{c.title[1:]} (`{c.id}`)")
        parts.append("")
        if c.stakes:
            parts.append(f"- if it is wrong: {c.stakes}")
        if c.strong:
            parts.append("- strong: " + ", ".join(f"`{_readable(p)}`" for p in c.strong if p not in c.placed))
        if c.placed:
            parts.append(
                "- strong only where a word of the file path or the symbol's name starts with "
                + ", ".join(f"`{w}`" for w in c.placed_by)
                + ": "
                + ", ".join(f"`{_readable(p)}`" for p in c.placed)
            )
        if c.weak:
            parts.append("- supporting: " + ", ".join(f"`{_readable(p)}`" for p in c.weak))
        if c.names:
            parts.append("- name words: " + ", ".join(f"`{n}`" for n in sorted(c.names)))
        if c.name_patterns:
            parts.append("- name patterns: " + ", ".join(f"`{_readable(p)}`" for p in c.name_patterns))
        for language, calls in c.calls.items():
            label = "any language" if language == ALL else language
            parts.append(f"- calls ({label}): " + ", ".join(f"`{x}`" for x in calls))
        if c.detected:
            parts.append(f"- recognised by: {c.detected}")
        if c.context:
            parts.append(
                "- applies only to symbols whose name has one of: "
                + ", ".join(f"`{w}`" for w in sorted(c.context))
            )
        parts.append("")
    return "\n".join(parts)


def render_risk_page() -> str:
    """docs/risk.md: the per-language risk tables, then this catalogue."""
    from engine.semantic.risk import render_risk_doc

    return render_risk_doc().rstrip("\n") + "\n\n" + render_catalogue()
