import base64, hashlib, hmac, time

def verify(secret: str, headers: dict, body: bytes, tolerance: int = 300) -> bool:
    """True when the request was signed with secret (Standard Webhooks v1)."""
    if secret.startswith("whsec_"):
        key = base64.b64decode(secret[len("whsec_"):])
    else:
        key = secret.encode()  # raw secret: its bytes are the key
    msg_id, ts = headers["webhook-id"], headers["webhook-timestamp"]
    if abs(time.time() - int(ts)) > tolerance:  # replay protection
        return False
    mac = hmac.new(key, f"{msg_id}.{ts}.".encode() + body, hashlib.sha256)
    expected = base64.b64encode(mac.digest()).decode()
    return any(hmac.compare_digest(expected, sig[3:])
               for sig in headers["webhook-signature"].split() if sig.startswith("v1,"))
