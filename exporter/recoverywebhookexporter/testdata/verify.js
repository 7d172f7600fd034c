const crypto = require("node:crypto");

// body: the raw request body as a Buffer (before any JSON parsing).
function verify(secret, headers, body, toleranceSec = 300) {
  const key = secret.startsWith("whsec_")
    ? Buffer.from(secret.slice("whsec_".length), "base64")
    : Buffer.from(secret); // raw secret: its bytes are the key
  const id = headers["webhook-id"], ts = headers["webhook-timestamp"];
  if (Math.abs(Date.now() / 1000 - Number(ts)) > toleranceSec) return false;
  const expected = crypto.createHmac("sha256", key).update(`${id}.${ts}.`).update(body).digest();
  return headers["webhook-signature"].split(" ").some((entry) => {
    const [version, sig = ""] = entry.split(",");
    const got = Buffer.from(sig, "base64");
    return version === "v1" && got.length === expected.length && crypto.timingSafeEqual(got, expected);
  });
}
module.exports = { verify };
