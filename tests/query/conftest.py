"""Fixtures for the query tests: small real repositories in several languages, built once
per module with the real build pipeline."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from codeagent.indexer.build import BuildOptions, build
from codeagent.query import IndexView, open_index
from repo_helpers import GitRepo

POLY = {
    "app/server.py": '''"""HTTP server with rate limiting."""
import json

from app.util import helper


class RateLimiter:
    """Token bucket rate limiter."""

    def __init__(self, rate):
        self.rate = rate

    def check_rate_limit(self, request):
        """Return True when the request may pass."""
        return helper(request) < self.rate


class SlidingWindowLimiter(RateLimiter):
    def check_rate_limit(self, request):
        return False


def parse_http_response(raw):
    headers, _, body = raw.partition("\\r\\n\\r\\n")
    return json.loads(body)


def handle_request(request):
    limiter = RateLimiter(10)
    if not limiter.check_rate_limit(request):
        raise ConnectionResetError("peer closed the connection")
    return parse_http_response(request)
''',
    "app/util.py": '''def helper(value):
    return len(value)


def unused_helper():
    return helper("x")
''',
    "app/__init__.py": "",
    "web/client.ts": '''export class HttpClient {
  constructor(private baseUrl: string) {}

  async fetchJson(path: string): Promise<unknown> {
    const response = await fetch(this.baseUrl + path);
    return parseHttpResponse(await response.text());
  }
}

export function parseHttpResponse(text: string): unknown {
  return JSON.parse(text);
}
''',
    "cmd/main.go": '''package main

import "fmt"

type Server struct {
	Addr string
}

func (s *Server) Start() error {
	fmt.Println("listening on", s.Addr)
	return nil
}

func ParseConfig(path string) (*Server, error) {
	return &Server{Addr: path}, nil
}
''',
    "src/lib.rs": '''pub struct Claims {
    pub sub: String,
}

/// Validate a JWT and return its claims.
pub fn validate_token(token: &str, key: &[u8]) -> Result<Claims, String> {
    if token.is_empty() || key.is_empty() {
        return Err("empty token".to_string());
    }
    Ok(Claims { sub: token.to_string() })
}
''',
    "docs/guide.md": '''# Guide

## Rate limiting

The server applies a token bucket rate limiter to every request.

## Errors

A closed peer raises ConnectionResetError.
''',
    "notes.txt": "remember: ConnectionResetError means the peer closed the socket\n",
}


@contextmanager
def sql_and_memory(repo: Path) -> Iterator[tuple[IndexView, IndexView]]:
    """Two views of the repo's main index: one answering through SQL, one that keeps its
    tables in memory as a long-lived reader (the server) does."""
    with open_index(repo, ref="main") as sql, open_index(repo, ref="main") as mem:
        mem.keep_text_in_memory = True
        yield sql, mem


def build_repo(path: Path, files: dict[str, str], rev: str | None = "main") -> GitRepo:
    repo = GitRepo.create(path)
    repo.write_many(files)
    repo.commit("init")
    build(BuildOptions(repo=repo.path, rev=rev, jobs=1))
    return repo


@pytest.fixture(scope="module")
def poly_repo(tmp_path_factory) -> GitRepo:
    return build_repo(tmp_path_factory.mktemp("poly") / "repo", POLY)


@pytest.fixture(scope="module")
def poly(poly_repo):
    with open_index(poly_repo.path, ref="main") as view:
        yield view
