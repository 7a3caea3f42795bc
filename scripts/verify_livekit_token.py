#!/usr/bin/env python3
"""Verifies a LiveKit access token with LiveKit's own Python verifier (test tooling only).

Usage: verify_livekit_token.py TOKEN API_KEY API_SECRET
Prints the verified claims as JSON (identity, room, grants) and exits 0; exits 1 with the
verifier's message when the token is rejected.
"""
import json
import sys

from livekit.api import TokenVerifier


def main() -> int:
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    token, key, secret = sys.argv[1:]
    try:
        claims = TokenVerifier(key, secret).verify(token)
    except Exception as error:  # the verifier raises several types; all mean "rejected"
        print(f"rejected: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    video = claims.video
    print(json.dumps({
        "identity": claims.identity,
        "room": video.room,
        "room_join": video.room_join,
        "can_publish": video.can_publish,
        "can_subscribe": video.can_subscribe,
        "can_publish_data": video.can_publish_data,
        "can_publish_sources": list(video.can_publish_sources or []),
        "room_admin": video.room_admin,
        "room_create": video.room_create,
    }, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
