"""Records as lines of text: what `replog produce` reads and `replog consume` prints.

Input (`replog produce`), one record per line:

- `--input-format text` (the default): the line is the value; with `--key-separator SEP`
  the text before the first SEP is the key (kafka-console-producer's parse.key).
- `--input-format json`: the line is an object with `value` (text) and optionally `key`
  (text or null), `headers` (an object of key to text or null, or a list of
  {"key": .., "value": ..} objects, for repeated keys) and `timestamp_ms`.

Both add the `--header KEY=VALUE` headers (repeatable) to every record, after the line's own.

Output (`replog consume`), text: one line per record, its fields separated by tabs in
kafka-console-consumer's order, each only when asked: `CreateTime:<ms>` or
`LogAppendTime:<ms>` (`--print-timestamp`), `<partition>:<offset>` (`--print-offset`),
the headers as `k1:v1,k2:v2` or `NO_HEADERS` (`--print-headers`), the key
(`--print-key`), then the value. With `--output json`, one object per record holding every
field. `--value-format` and `--key-format` (utf-8, the default, also called text; hex; base64) say
how values (and header values) and keys are written, in both directions: `replog produce` decodes
them from the line (a JSON line's strings too), `replog consume` encodes them, so binary keys and
values travel through a terminal undamaged as hex or base64.
"""

from __future__ import annotations

import base64
import datetime
import json

VALUE_FORMATS = ("text", "utf-8", "hex", "base64")  # text and utf-8 are one format
INPUT_FORMATS = ("text", "json")
_JSON_FIELDS = ("key", "value", "headers", "timestamp_ms")

Headers = list[tuple[str, "bytes | None"]]


class LineError(ValueError):
    """A line or an argument that does not say a record; the message says what is wrong."""


def parse_header_argument(text: str) -> tuple[str, bytes]:
    """`KEY=VALUE` (the value may be empty, or hold '=') as a header."""
    key, separator, value = text.partition("=")
    if not separator or not key:
        raise LineError(f"--header {text!r}: expected KEY=VALUE with a non-empty KEY")
    return key, value.encode()


def parse_bytes(text: str, data_format: str, what: str = "value") -> bytes:
    """`text` as bytes in `data_format` (utf-8/text, hex, base64): what `format_bytes` printed."""
    if data_format == "hex":
        try:
            return bytes.fromhex(text)
        except ValueError:
            raise LineError(f"the {what} {text[:40]!r} is not hex") from None
    if data_format == "base64":
        try:
            return base64.b64decode(text, validate=True)
        except ValueError:
            raise LineError(f"the {what} {text[:40]!r} is not base64") from None
    return text.encode()


def parse_line(line: str, input_format: str, key_separator: str | None, extra_headers: Headers, *,
               key_format: str = "text", value_format: str = "text") -> tuple[bytes | None, bytes, Headers, int | None]:
    """(key, value, headers, timestamp_ms or None) of one input line, without its newline; keys and
    values (a JSON line's header values too) decoded from `key_format` and `value_format`."""
    if input_format == "json":
        key, value, headers, timestamp_ms = _parse_json_line(line)
        if key_format not in ("text", "utf-8") and key is not None:
            key = parse_bytes(key.decode(), key_format, "key")
        if value_format not in ("text", "utf-8"):
            value = parse_bytes(value.decode(), value_format)
            headers = [(k, None if v is None else parse_bytes(v.decode(), value_format, f"header {k!r}"))
                       for k, v in headers]
        return key, value, headers + extra_headers, timestamp_ms
    key = None
    if key_separator and key_separator in line:
        key_text, line = line.split(key_separator, 1)
        key = parse_bytes(key_text, key_format, "key")
    return key, parse_bytes(line, value_format), list(extra_headers), None


def _parse_json_line(line: str) -> tuple[bytes | None, bytes, Headers, int | None]:
    try:
        item = json.loads(line)
    except json.JSONDecodeError as exc:
        raise LineError(f"not JSON: {exc}") from None
    if not isinstance(item, dict):
        raise LineError("expected a JSON object with a 'value'")
    unknown = sorted(set(item) - set(_JSON_FIELDS))
    if unknown:
        raise LineError(f"unknown field(s) {', '.join(unknown)}; a line may hold {', '.join(_JSON_FIELDS)}")
    value = item.get("value")
    if not isinstance(value, str):
        raise LineError("'value' must be a string")
    key = item.get("key")
    if key is not None and not isinstance(key, str):
        raise LineError("'key' must be a string or null")
    timestamp_ms = item.get("timestamp_ms")
    if timestamp_ms is not None and (isinstance(timestamp_ms, bool) or not isinstance(timestamp_ms, int)):
        raise LineError("'timestamp_ms' must be an integer (milliseconds since the Unix epoch)")
    return None if key is None else key.encode(), value.encode(), _json_headers(item.get("headers")), timestamp_ms


def _json_headers(headers) -> Headers:
    if headers is None:
        return []
    if isinstance(headers, dict):
        pairs = list(headers.items())
    elif isinstance(headers, list) and all(isinstance(h, dict) and set(h) <= {"key", "value"} for h in headers):
        pairs = [(h.get("key"), h.get("value")) for h in headers]
    else:
        raise LineError("'headers' must be an object, or a list of {\"key\": .., \"value\": ..} objects")
    out: Headers = []
    for key, value in pairs:
        if not isinstance(key, str) or not key:
            raise LineError(f"a header key must be a non-empty string, not {key!r}")
        if value is not None and not isinstance(value, str):
            raise LineError(f"the value of header {key!r} must be a string or null")
        out.append((key, None if value is None else value.encode()))
    return out


def parse_timestamp(text: str) -> int:
    """`--from-timestamp`: milliseconds since the Unix epoch, or an ISO 8601 date and time
    (UTC when it names no offset)."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise LineError(f"--from-timestamp {text!r}: expected milliseconds since the Unix epoch or an ISO 8601 "
                        "date and time such as 2026-11-26T08:30:00Z") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return int(moment.timestamp() * 1000)


def format_bytes(data: bytes, value_format: str) -> str:
    if value_format == "hex":
        return data.hex()
    if value_format == "base64":
        return base64.b64encode(data).decode()
    return data.decode(errors="replace")


def record_as_json(record, value_format: str, key_format: str = "text") -> dict:
    """Every field of a ConsumerRecord, values and header values in `value_format`, the key in `key_format`."""
    return {
        "partition": record.partition,
        "offset": record.offset,
        "timestamp_ms": record.timestamp_ms,
        "timestamp_type": record.timestamp_type.value,
        "key": format_bytes(record.key, key_format) if record.key is not None else None,
        "headers": [{"key": k, "value": None if v is None else format_bytes(v, value_format)}
                    for k, v in record.headers],
        "value": format_bytes(record.value, value_format),
    }


def record_as_text(record, *, value_format: str, timestamp: bool, offset: bool, headers: bool, key: bool,
                   key_format: str = "text") -> str:
    """One tab-separated line, the fields asked for in kafka-console-consumer's order."""
    fields = []
    if timestamp:
        fields.append(f"{record.timestamp_type.value}:{record.timestamp_ms}")
    if offset:
        fields.append(f"{record.partition}:{record.offset}")
    if headers:
        fields.append(",".join(f"{k}:{'null' if v is None else format_bytes(v, value_format)}"
                               for k, v in record.headers) or "NO_HEADERS")
    if key:
        fields.append(format_bytes(record.key or b"", key_format))
    fields.append(format_bytes(record.value, value_format))
    return "\t".join(fields)
