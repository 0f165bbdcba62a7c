// A small, self-contained JSON reader and writer: enough for the guardrail
// envelope, parameters and outputs, with no dependency beyond the standard
// library of AssemblyScript.

export enum Kind {
  Null = 0,
  Bool = 1,
  Number = 2,
  String = 3,
  Array = 4,
  Object = 5,
}

// A JSON value. Objects keep their keys in order; a number keeps its source
// text, so a body written back keeps large integers exact.
export class Value {
  kind: Kind = Kind.Null;
  bool: bool = false;
  num: f64 = 0;
  // str is a string's value, or a number's text.
  str: string = "";
  // items are an array's elements or an object's values; keys an object's keys.
  items: Array<Value> = [];
  keys: Array<string> = [];

  static nullValue(): Value {
    return new Value();
  }

  static fromBool(b: bool): Value {
    const v = new Value();
    v.kind = Kind.Bool;
    v.bool = b;
    return v;
  }

  static fromNumber(n: f64): Value {
    const v = new Value();
    v.kind = Kind.Number;
    v.num = n;
    v.str = formatNumber(n);
    return v;
  }

  static fromString(s: string): Value {
    const v = new Value();
    v.kind = Kind.String;
    v.str = s;
    return v;
  }

  static fromStrings(list: Array<string>): Value {
    const v = Value.array();
    for (let i = 0; i < list.length; i++) v.push(Value.fromString(list[i]));
    return v;
  }

  static array(): Value {
    const v = new Value();
    v.kind = Kind.Array;
    return v;
  }

  static object(): Value {
    const v = new Value();
    v.kind = Kind.Object;
    return v;
  }

  get isNull(): bool { return this.kind == Kind.Null; }
  get isBool(): bool { return this.kind == Kind.Bool; }
  get isNumber(): bool { return this.kind == Kind.Number; }
  get isString(): bool { return this.kind == Kind.String; }
  get isArray(): bool { return this.kind == Kind.Array; }
  get isObject(): bool { return this.kind == Kind.Object; }

  // The number of an array's elements or an object's members.
  get length(): i32 { return this.items.length; }

  // An object's member, or null.
  get(key: string): Value | null {
    if (this.kind != Kind.Object) return null;
    for (let i = 0; i < this.keys.length; i++) {
      if (this.keys[i] == key) return this.items[i];
    }
    return null;
  }

  // An array's element, or null.
  at(i: i32): Value | null {
    if (this.kind != Kind.Array || i < 0 || i >= this.items.length) return null;
    return this.items[i];
  }

  // Sets an object's member (replacing one of the same key); returns this.
  set(key: string, v: Value): Value {
    for (let i = 0; i < this.keys.length; i++) {
      if (this.keys[i] == key) {
        this.items[i] = v;
        return this;
      }
    }
    this.keys.push(key);
    this.items.push(v);
    return this;
  }

  // Appends to an array; returns this.
  push(v: Value): Value {
    this.items.push(v);
    return this;
  }

  // A string member's value, or def.
  getString(key: string, def: string = ""): string {
    const v = this.get(key);
    return v != null && v.kind == Kind.String ? v.str : def;
  }

  // A numeric member's value, or def.
  getNumber(key: string, def: f64 = 0): f64 {
    const v = this.get(key);
    return v != null && v.kind == Kind.Number ? v.num : def;
  }

  // A boolean member's value, or def.
  getBool(key: string, def: bool = false): bool {
    const v = this.get(key);
    return v != null && v.kind == Kind.Bool ? v.bool : def;
  }

  // The JSON text of this value.
  stringify(): string {
    const parts = new Array<string>();
    this.write(parts);
    return parts.join("");
  }

  toString(): string {
    return this.stringify();
  }

  private write(out: Array<string>): void {
    switch (this.kind) {
      case Kind.Null:
        out.push("null");
        break;
      case Kind.Bool:
        out.push(this.bool ? "true" : "false");
        break;
      case Kind.Number:
        out.push(this.str.length > 0 ? this.str : formatNumber(this.num));
        break;
      case Kind.String:
        out.push(quote(this.str));
        break;
      case Kind.Array: {
        out.push("[");
        for (let i = 0; i < this.items.length; i++) {
          if (i > 0) out.push(",");
          this.items[i].write(out);
        }
        out.push("]");
        break;
      }
      case Kind.Object: {
        out.push("{");
        for (let i = 0; i < this.items.length; i++) {
          if (i > 0) out.push(",");
          out.push(quote(this.keys[i]));
          out.push(":");
          this.items[i].write(out);
        }
        out.push("}");
        break;
      }
    }
  }
}

function formatNumber(n: f64): string {
  if (!isFinite(n)) return "null";
  if (n == Math.trunc(n) && Math.abs(n) < 9007199254740992) {
    return (<i64>n).toString();
  }
  return n.toString();
}

const HEX = "0123456789abcdef";

// quote is s as a JSON string literal.
export function quote(s: string): string {
  let plain = true;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c == 0x22 || c == 0x5c) {
      plain = false;
      break;
    }
  }
  if (plain) return "\"" + s + "\"";
  const parts = new Array<string>();
  parts.push("\"");
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    let esc = "";
    if (c == 0x22) esc = "\\\"";
    else if (c == 0x5c) esc = "\\\\";
    else if (c == 0x0a) esc = "\\n";
    else if (c == 0x0d) esc = "\\r";
    else if (c == 0x09) esc = "\\t";
    else if (c == 0x08) esc = "\\b";
    else if (c == 0x0c) esc = "\\f";
    else if (c < 0x20) esc = "\\u00" + HEX.charAt(c >> 4) + HEX.charAt(c & 15);
    else continue;
    parts.push(s.substring(start, i));
    parts.push(esc);
    start = i + 1;
  }
  parts.push(s.substring(start));
  parts.push("\"");
  return parts.join("");
}

// parse reads a JSON text; null when it is not valid JSON.
export function parse(s: string): Value | null {
  const p = new Parser(s);
  p.skipSpace();
  const v = p.value(0);
  if (v == null) return null;
  p.skipSpace();
  if (p.i != s.length) return null;
  return v;
}

const MAX_DEPTH = 512;

class Parser {
  s: string;
  i: i32 = 0;

  constructor(s: string) {
    this.s = s;
  }

  skipSpace(): void {
    const s = this.s;
    while (this.i < s.length) {
      const c = s.charCodeAt(this.i);
      if (c != 0x20 && c != 0x0a && c != 0x0d && c != 0x09) break;
      this.i++;
    }
  }

  value(depth: i32): Value | null {
    if (depth > MAX_DEPTH || this.i >= this.s.length) return null;
    const c = this.s.charCodeAt(this.i);
    if (c == 0x7b) return this.object(depth);
    if (c == 0x5b) return this.array(depth);
    if (c == 0x22) {
      const str = this.string();
      if (str == null) return null;
      return Value.fromString(str);
    }
    if (c == 0x2d || (c >= 0x30 && c <= 0x39)) return this.number();
    if (this.word("true")) return Value.fromBool(true);
    if (this.word("false")) return Value.fromBool(false);
    if (this.word("null")) return Value.nullValue();
    return null;
  }

  word(w: string): bool {
    if (this.s.substr(this.i, w.length) == w) {
      this.i += w.length;
      return true;
    }
    return false;
  }

  object(depth: i32): Value | null {
    const v = Value.object();
    this.i++; // {
    this.skipSpace();
    if (this.i < this.s.length && this.s.charCodeAt(this.i) == 0x7d) {
      this.i++;
      return v;
    }
    while (true) {
      this.skipSpace();
      if (this.i >= this.s.length || this.s.charCodeAt(this.i) != 0x22) return null;
      const key = this.string();
      if (key == null) return null;
      this.skipSpace();
      if (this.i >= this.s.length || this.s.charCodeAt(this.i) != 0x3a) return null;
      this.i++;
      this.skipSpace();
      const item = this.value(depth + 1);
      if (item == null) return null;
      // Duplicate keys: the last one wins, as in most decoders.
      v.set(key, item);
      this.skipSpace();
      if (this.i >= this.s.length) return null;
      const c = this.s.charCodeAt(this.i++);
      if (c == 0x7d) return v;
      if (c != 0x2c) return null;
    }
  }

  array(depth: i32): Value | null {
    const v = Value.array();
    this.i++; // [
    this.skipSpace();
    if (this.i < this.s.length && this.s.charCodeAt(this.i) == 0x5d) {
      this.i++;
      return v;
    }
    while (true) {
      this.skipSpace();
      const item = this.value(depth + 1);
      if (item == null) return null;
      v.push(item);
      this.skipSpace();
      if (this.i >= this.s.length) return null;
      const c = this.s.charCodeAt(this.i++);
      if (c == 0x5d) return v;
      if (c != 0x2c) return null;
    }
  }

  number(): Value | null {
    const s = this.s;
    const start = this.i;
    if (s.charCodeAt(this.i) == 0x2d) this.i++;
    const digits = this.i;
    while (this.i < s.length) {
      const c = s.charCodeAt(this.i);
      if ((c >= 0x30 && c <= 0x39) || c == 0x2e || c == 0x65 || c == 0x45 || c == 0x2b || c == 0x2d) {
        this.i++;
      } else {
        break;
      }
    }
    if (this.i == digits) return null;
    const text = s.substring(start, this.i);
    const n = parseFloat(text);
    if (isNaN(n)) return null;
    const v = new Value();
    v.kind = Kind.Number;
    v.num = n;
    v.str = text;
    return v;
  }

  // string reads a string literal at i (at its opening quote).
  string(): string | null {
    const s = this.s;
    this.i++; // "
    let start = this.i;
    let parts: Array<string> | null = null;
    while (this.i < s.length) {
      const c = s.charCodeAt(this.i);
      if (c == 0x22) {
        const tail = s.substring(start, this.i);
        this.i++;
        if (parts == null) return tail;
        parts.push(tail);
        return parts.join("");
      }
      if (c < 0x20) return null;
      if (c != 0x5c) {
        this.i++;
        continue;
      }
      if (parts == null) parts = new Array<string>();
      parts.push(s.substring(start, this.i));
      this.i++;
      if (this.i >= s.length) return null;
      const e = s.charCodeAt(this.i++);
      if (e == 0x22) parts.push("\"");
      else if (e == 0x5c) parts.push("\\");
      else if (e == 0x2f) parts.push("/");
      else if (e == 0x62) parts.push("\b");
      else if (e == 0x66) parts.push("\f");
      else if (e == 0x6e) parts.push("\n");
      else if (e == 0x72) parts.push("\r");
      else if (e == 0x74) parts.push("\t");
      else if (e == 0x75) {
        if (this.i + 4 > s.length) return null;
        let code = 0;
        for (let k = 0; k < 4; k++) {
          const h = s.charCodeAt(this.i++);
          let d: i32;
          if (h >= 0x30 && h <= 0x39) d = h - 0x30;
          else if (h >= 0x61 && h <= 0x66) d = h - 0x61 + 10;
          else if (h >= 0x41 && h <= 0x46) d = h - 0x41 + 10;
          else return null;
          code = (code << 4) | d;
        }
        // Surrogate pairs arrive as two escapes and join up as UTF-16.
        parts.push(String.fromCharCode(code));
      } else {
        return null;
      }
      start = this.i;
    }
    return null;
  }
}
