#!/usr/bin/env python3
"""A small stand-in for the Hugging Face hub, for testing dllm's hub client (src/hub) on 127.0.0.1.

Python standard library only. Implements the endpoints the client uses, with the shapes of the real hub
(huggingface_hub hf_api.model_info / file_download.get_hf_file_metadata):

  GET  /api/models/{org}/{repo}/revision/{rev}[?blobs=true]
       -> {"id", "sha": commit, "siblings": [{"rfilename", "size", "blobId", "lfs": {"sha256", "size",
          "pointerSize"}}]}   (lfs only for LFS files; size/lfs only with ?blobs=true)
  HEAD/GET /{org}/{repo}/resolve/{rev}/{file}
       LFS file: 302 to /cdn/{sha256}?..., headers X-Repo-Commit, X-Linked-Etag, X-Linked-Size, ETag
       other:    200 with the bytes, ETag = git blob sha1
  GET  /cdn/{sha256}   the bytes; Range: bytes=a- / a-b -> 206 with Content-Range; ETag; Accept-Ranges
Errors carry X-Error-Code (RepoNotFound, RevisionNotFound, EntryNotFound, GatedRepo) and X-Error-Message.

Repos come from --repos FILE (JSON) or, without it, from --shared DIR (org/tiny = the tiny LLaDA
reference model as tiny-Q4_K_M.gguf plus small extra files; org/tiny-dream = the tiny Dream model):
  {"org/tiny": {"commit": "<40 hex>", "token": "<optional: required Bearer token (gated)>",
                "no_blob_info": false (true: siblings without size/lfs, like an older mirror),
                "files": {"tiny-Q4_K_M.gguf": {"path": "/abs/file"},
                          "tiny-Q8_0.gguf": {"synthetic": 4096},
                          "README.md": {"text": "hello", "lfs": false}}}}

Fault injection (read from --faults FILE before every request, so a test changes it while the server
runs): a JSON list of rules; the first rule that matches a request applies.
  {"id": "any unique name", "where": "api" | "resolve" | "cdn", "repo": "org/x" (optional),
   "times": N (optional: apply to the first N matching requests only),
   "status": 401 | 404 | 500 | ..., "error_code": "...", "message": "..."   -> an error answer
   "cut_after": N          -> announce the full Content-Length, send N body bytes, drop the connection
   "corrupt_at": OFFSET    -> flip the bits of the byte at OFFSET of the file
   "stall_s": S, "stall_after": N  -> cdn: send the headers and N body bytes (default 0), then sleep
                                      S seconds; api/resolve: sleep S seconds before answering
   "body": TEXT, "body_repeat": N  -> api: answer 200 with TEXT (repeated N times, default 1) as the
                                      model-info body (a hostile or broken server)}
Every request is appended to --log FILE as one JSON line: method, path, range, authorization.
The port (--port 0 = any free port) is written to --ready-file once the server listens.
"""

import argparse
import hashlib
import json
import os
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

CHUNK = 1 << 20


class Blob:
    """One file of a repo: bytes from a path, inline text, or synthetic (deterministic pseudo-random)."""

    def __init__(self, name, spec):
        self.name = name
        self.path = spec.get("path")
        self.lfs = spec.get("lfs", True)
        if self.path:
            self.data = None
            self.size = os.path.getsize(self.path)
        elif "text" in spec:
            self.data = spec["text"].encode()
            self.size = len(self.data)
        else:
            n = int(spec["synthetic"])
            seed = hashlib.sha256(name.encode()).digest()
            out = bytearray()
            counter = 0
            while len(out) < n:
                out += hashlib.sha256(seed + counter.to_bytes(8, "little")).digest()
                counter += 1
            self.data = bytes(out[:n])
            self.size = n
        h = hashlib.sha256()
        for chunk in self.chunks(0, self.size):
            h.update(chunk)
        self.sha256 = h.hexdigest()
        # Git blob id (sha1 of "blob <size>\0" + content), what the hub shows for non-LFS files.
        g = hashlib.sha1(b"blob %d\0" % self.size)
        for chunk in self.chunks(0, self.size):
            g.update(chunk)
        self.git_sha1 = g.hexdigest()

    def chunks(self, start, end):
        if self.data is not None:
            for i in range(start, end, CHUNK):
                yield self.data[i:min(end, i + CHUNK)]
            return
        with open(self.path, "rb") as f:
            f.seek(start)
            pos = start
            while pos < end:
                b = f.read(min(CHUNK, end - pos))
                if not b:
                    break
                pos += len(b)
                yield b


class Hub:
    def __init__(self, repos, faults_path, log_path):
        self.repos = {}
        self.by_sha = {}
        for repo_id, r in repos.items():
            files = {name: Blob(name, spec) for name, spec in r["files"].items()}
            commit = r.get("commit") or hashlib.sha1(repo_id.encode()).hexdigest()
            self.repos[repo_id] = {"commit": commit, "token": r.get("token"), "files": files,
                                   "no_blob_info": r.get("no_blob_info", False)}
            for b in files.values():
                self.by_sha[b.sha256] = b
        self.faults_path = faults_path
        self.log_path = log_path
        self.lock = threading.Lock()
        self.used = {}

    def fault_for(self, where, repo):
        if not self.faults_path or not os.path.exists(self.faults_path):
            return None
        try:
            with open(self.faults_path) as f:
                rules = json.load(f)
        except (OSError, ValueError):
            return None
        with self.lock:
            for i, rule in enumerate(rules):
                if rule.get("where") not in (None, where):
                    continue
                if rule.get("repo") not in (None, repo):
                    continue
                key = rule.get("id", str(i))
                if "times" in rule and self.used.get(key, 0) >= rule["times"]:
                    continue
                self.used[key] = self.used.get(key, 0) + 1
                return rule
        return None

    def log(self, entry):
        if not self.log_path:
            return
        with self.lock, open(self.log_path, "a") as f:
            f.write(json.dumps(entry) + "\n")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-hub/1"

    def log_message(self, fmt, *args):  # quiet: the JSON log is the record
        pass

    @property
    def hub(self):
        return self.server.hub

    def do_HEAD(self):
        self.route(head=True)

    def do_GET(self):
        self.route(head=False)

    # --- answers -------------------------------------------------------------------------------

    def send_error_answer(self, status, code=None, message=None, head=False):
        body = json.dumps({"error": message or "error"}).encode()
        self.send_response(status)
        if code:
            self.send_header("X-Error-Code", code)
        if message:
            self.send_header("X-Error-Message", message)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def apply_status_fault(self, fault, head, stall_here=True):
        if fault and stall_here and "stall_s" in fault:
            time.sleep(fault["stall_s"])  # before any header: the client sees nothing at all
        if fault and "status" in fault:
            self.send_error_answer(fault["status"], fault.get("error_code"), fault.get("message"), head)
            return True
        return False

    def route(self, head):
        url = urlsplit(self.path)
        path = unquote(url.path)
        self.hub.log({"method": self.command, "path": self.path, "range": self.headers.get("Range"),
                      "authorization": self.headers.get("Authorization")})
        parts = path.strip("/").split("/")
        if len(parts) >= 6 and parts[0] == "api" and parts[1] == "models" and parts[4] == "revision":
            self.model_info(parts[2] + "/" + parts[3], "/".join(parts[5:]), url.query, head)
        elif len(parts) >= 5 and parts[2] == "resolve":
            self.resolve(parts[0] + "/" + parts[1], parts[3], "/".join(parts[4:]), head)
        elif len(parts) == 2 and parts[0] == "cdn":
            self.cdn(parts[1], head)
        else:
            self.send_error_answer(404, None, "no such endpoint: " + path, head)

    def repo_or_error(self, repo_id, revision, head):
        repo = self.hub.repos.get(repo_id)
        if repo is None:
            self.send_error_answer(404, "RepoNotFound", "Repository Not Found for url: " + self.path, head)
            return None
        if repo["token"] and self.headers.get("Authorization") != "Bearer " + repo["token"]:
            self.send_error_answer(401, "GatedRepo", "Access to model %s is restricted." % repo_id, head)
            return None
        if revision not in ("main", repo["commit"]):
            self.send_error_answer(404, "RevisionNotFound", "Invalid rev id: " + revision, head)
            return None
        return repo

    def model_info(self, repo_id, revision, query, head):
        fault = self.hub.fault_for("api", repo_id)
        if self.apply_status_fault(fault, head):
            return
        if fault and "body" in fault:
            piece = fault["body"].encode("utf-8", "surrogateescape")
            n = fault.get("body_repeat", 1)
            # One answer per connection: a client that stops reading a huge body resets it.
            self.close_connection = True
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(piece) * n))
            self.send_header("Connection", "close")
            self.end_headers()
            if not head:
                try:
                    for _ in range(n):
                        self.wfile.write(piece)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client stopped reading: expected for huge bodies
            return
        repo = self.repo_or_error(repo_id, revision, head)
        if repo is None:
            return
        blobs = "blobs=true" in query and not repo["no_blob_info"]
        siblings = []
        for b in repo["files"].values():
            s = {"rfilename": b.name}
            if blobs:
                s["size"] = b.size
                s["blobId"] = b.git_sha1
                if b.lfs:
                    s["lfs"] = {"sha256": b.sha256, "size": b.size, "pointerSize": 134}
            siblings.append(s)
        body = json.dumps({"id": repo_id, "modelId": repo_id, "sha": repo["commit"], "private": False,
                           "gated": bool(repo["token"]), "siblings": siblings}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Repo-Commit", repo["commit"])
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def resolve(self, repo_id, revision, filename, head):
        if self.apply_status_fault(self.hub.fault_for("resolve", repo_id), head):
            return
        repo = self.repo_or_error(repo_id, revision, head)
        if repo is None:
            return
        b = repo["files"].get(filename)
        if b is None:
            self.send_error_answer(404, "EntryNotFound", "%s does not exist in %s" % (filename, repo_id), head)
            return
        if not b.lfs:
            self.send_bytes(b, None, head, extra={"X-Repo-Commit": repo["commit"], "ETag": '"%s"' % b.git_sha1})
            return
        self.send_response(302)
        self.send_header("Location", "/cdn/%s?expires=9999999999&signature=fake" % b.sha256)
        self.send_header("X-Repo-Commit", repo["commit"])
        self.send_header("X-Linked-Etag", '"%s"' % b.sha256)
        self.send_header("X-Linked-Size", str(b.size))
        self.send_header("ETag", '"%s"' % b.git_sha1)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def cdn(self, sha, head):
        b = self.hub.by_sha.get(sha)
        if b is None:
            self.send_error_answer(404, None, "no such object", head)
            return
        repo_id = next((r for r, v in self.hub.repos.items() if b.name in v["files"]), None)
        fault = self.hub.fault_for("cdn", repo_id)
        if self.apply_status_fault(fault, head, stall_here=False):
            return
        self.send_bytes(b, fault, head, extra={"ETag": '"%s"' % b.sha256})

    def send_bytes(self, b, fault, head, extra):
        start, end = 0, b.size
        rng = self.headers.get("Range")
        status = 200
        if rng:
            try:
                unit, spec = rng.split("=", 1)
                first, last = spec.split("-", 1)
                start = int(first)
                end = int(last) + 1 if last else b.size
                if unit.strip() != "bytes" or start >= b.size or end > b.size or start >= end:
                    raise ValueError
                status = 206
            except ValueError:
                self.send_response(416)
                self.send_header("Content-Range", "bytes */%d" % b.size)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Length", str(end - start))
        if status == 206:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end - 1, b.size))
        for k, v in extra.items():
            self.send_header(k, v)
        self.end_headers()
        if head:
            return
        fault = fault or {}
        cut_after = fault.get("cut_after")
        corrupt_at = fault.get("corrupt_at")
        stall_s = fault.get("stall_s")
        stall_after = fault.get("stall_after", 0)
        sent = 0
        if stall_s is not None and stall_after == 0:
            time.sleep(stall_s)
        pos = start
        for chunk in b.chunks(start, end):
            if corrupt_at is not None and pos <= corrupt_at < pos + len(chunk):
                chunk = bytearray(chunk)
                chunk[corrupt_at - pos] ^= 0xFF
                chunk = bytes(chunk)
            if cut_after is not None and sent + len(chunk) >= cut_after:
                self.wfile.write(chunk[:cut_after - sent])
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return
            if stall_s is not None and stall_after > 0 and sent < stall_after <= sent + len(chunk):
                k = stall_after - sent
                self.wfile.write(chunk[:k])
                self.wfile.flush()
                time.sleep(stall_s)
                chunk = chunk[k:]
                sent += k
                pos += k
            try:
                self.wfile.write(chunk)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True
                return
            sent += len(chunk)
            pos += len(chunk)


def default_repos(shared):
    ref = os.path.join(shared, "reference")
    return {
        "org/tiny": {
            "commit": "1f2e3d4c5b6a79880123456789abcdef01234567",
            "files": {
                "README.md": {"text": "# tiny\nA tiny LLaDA-shaped model for tests.\n", "lfs": False},
                "tiny-Q4_K_M.gguf": {"path": os.path.join(ref, "tiny-llada-q4km.gguf")},
                "tiny-Q8_0.gguf": {"synthetic": 4096},
            },
        },
        "org/tiny-dream": {
            "commit": "2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d",
            "files": {"tiny-dream-Q4_K_M.gguf": {"path": os.path.join(ref, "tiny-dream-q4km.gguf")}},
        },
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--ready-file", help="written with the port once listening")
    ap.add_argument("--repos", help="repos JSON (see the module doc)")
    ap.add_argument("--shared", default=os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared"),
                    help="shared/ folder for the default repos")
    ap.add_argument("--faults", help="fault rules JSON, re-read on every request")
    ap.add_argument("--log", help="append one JSON line per request here")
    args = ap.parse_args()

    if args.repos:
        with open(args.repos) as f:
            repos = json.load(f)
    else:
        repos = default_repos(args.shared)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    server.hub = Hub(repos, args.faults, args.log)
    port = server.server_address[1]
    if args.ready_file:
        tmp = args.ready_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % port)
        os.replace(tmp, args.ready_file)
    print("fake hub on http://127.0.0.1:%d" % port, file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
