"""A local OAuth 2.1 authorization server for the step-up test, built on the MCP SDK's
authorization-server routes (`mcp.server.auth.routes.create_auth_routes`).

Usage:
    oauth_server.py --port PORT --issuer URL --public-key FILE --log FILE

The SDK's routes implement the protocol: authorization server metadata (RFC 8414), dynamic client
registration (RFC 7591), the authorization endpoint (redirect URI and scope checks against the
registration, PKCE S256 required) and the token endpoint (client authentication, the code bound to
its client and redirect URI, the PKCE verifier checked). This file supplies what an authorization
server decides for itself, as the SDK's provider interface asks:

* every registered client may ask for any scope of SCOPES, and a request is approved at once (the
  resource owner always consents: no login page, so no browser is needed);
* the access token is a JWT (RFC 9068) signed ES256 with a P-256 key made at start, whose public
  half is written to `--public-key` (PEM) before the server listens; it carries exactly the scopes
  the authorization request asked for, and the RFC 8707 resource the client named as its audience.

Every authorization request and every token issued is appended to `--log` as one JSON line, so the
test can check what the client asked for and what it got.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import time
from pathlib import Path
from typing import Any

import jwt
import uvicorn
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.routes import create_auth_routes
from mcp.server.auth.settings import ClientRegistrationOptions
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl
from starlette.applications import Starlette

SCOPES = ["mcp:tools", "deploy:write"]
"""The scopes this server knows; a client may ask for any of them."""

SUBJECT = "sdk-user"
"""The resource owner every request is approved for."""

TOKEN_LIFETIME = 300
"""Seconds an access token is valid."""

CODE_LIFETIME = 60
"""Seconds an authorization code may wait for its exchange."""


class Provider:
    """The decisions of this authorization server, behind the SDK's provider interface."""

    def __init__(self, issuer: str, key: ec.EllipticCurvePrivateKey, log: Path) -> None:
        self.issuer = issuer
        self.key = key
        self.log = log
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}

    def record(self, entry: dict[str, Any]) -> None:
        """Appends one JSON line to the log."""
        with self.log.open("a", encoding="utf-8") as out:
            out.write(json.dumps(entry, sort_keys=True) + "\n")

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        """Registers the client for every scope this server knows (RFC 7591 lets the server set
        the registered metadata), so that it may later step up to a scope it did not name."""
        self.clients[client_info.client_id] = client_info.model_copy(update={"scope": " ".join(SCOPES)})
        self.record({"event": "register", "client_id": client_info.client_id})

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        """Approves the request at once: an authorization code for exactly the scopes asked for."""
        code = AuthorizationCode(
            code=secrets.token_urlsafe(32),
            scopes=params.scopes or [],
            expires_at=time.time() + CODE_LIFETIME,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
            subject=SUBJECT,
        )
        self.codes[code.code] = code
        self.record({"event": "authorize", "scopes": code.scopes, "resource": params.resource})
        return construct_redirect_uri(str(params.redirect_uri), code=code.code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        code = self.codes.get(authorization_code)
        return code if code is not None and code.client_id == client.client_id else None

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        """Issues the JWT access token (single use of the code)."""
        if self.codes.pop(authorization_code.code, None) is None:
            raise TokenError("invalid_grant", "authorization code already used")
        if authorization_code.resource is None:
            raise TokenError("invalid_target", "name the resource (RFC 8707) the token is for")
        now = int(time.time())
        scope = " ".join(authorization_code.scopes)
        claims = {
            "iss": self.issuer,
            "aud": authorization_code.resource,
            "sub": SUBJECT,
            "client_id": client.client_id,
            "scope": scope,
            "iat": now,
            "exp": now + TOKEN_LIFETIME,
            "jti": secrets.token_urlsafe(16),
        }
        token = jwt.encode(claims, self.key, algorithm="ES256", headers={"typ": "at+jwt"})
        self.record({"event": "token", "scope": scope, "claims": claims})
        return OAuthToken(access_token=token, token_type="Bearer", expires_in=TOKEN_LIFETIME, scope=scope)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        return None  # no refresh tokens are issued

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        raise TokenError("invalid_grant", "no refresh tokens are issued")

    async def load_access_token(self, token: str) -> AccessToken | None:
        return None  # the resource server verifies the JWT itself

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        return None


def write_public_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    """Writes the public key as PEM, whole or not at all (a rename), so a reader never sees half."""
    pem = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    partial = path.with_name(path.name + ".partial")
    partial.write_bytes(pem)
    os.replace(partial, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True, help="port of 127.0.0.1 to listen on")
    parser.add_argument("--issuer", required=True, help="the issuer identifier, e.g. http://127.0.0.1:PORT/")
    parser.add_argument("--public-key", type=Path, required=True, help="where to write the signing key's public half")
    parser.add_argument("--log", type=Path, required=True, help="JSON lines of the requests and the tokens issued")
    args = parser.parse_args()

    key = ec.generate_private_key(ec.SECP256R1())
    write_public_key(key, args.public_key)
    provider = Provider(args.issuer, key, args.log)
    routes = create_auth_routes(
        provider,
        issuer_url=AnyHttpUrl(args.issuer),
        client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=SCOPES),
    )
    uvicorn.run(Starlette(routes=routes), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
