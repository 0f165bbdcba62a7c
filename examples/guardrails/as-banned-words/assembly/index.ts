// banned-words: fails when the text under check holds one of the words (or
// phrases) of the "words" parameter, compared case-insensitively and as
// whole words: "ass" matches "Ass!" but not "class".
//
// The text is scanned once, whatever the number of words: each word of the
// text is hashed as it is read and looked up in a table of the banned
// entries' first words. (Under the gateway every loop iteration of a guest
// pays for a check of the call's deadline, so the number of passes over the
// text is what costs.)
import { handle, Input, Output, Value, guardrail_abi_v1, guardrail_check } from "guardrail-as";

// The entry file must export the ABI's functions.
export { guardrail_abi_v1, guardrail_check };

// isWordChar: letters, digits, underscore and, roughly, any non-ASCII
// character that is not a space or general punctuation, so "café" and
// "naïve" are single words.
function isWordChar(c: i32): bool {
  if (c < 0x80) {
    return (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || c == 0x5f;
  }
  if (c == 0xa0 || (c >= 0x2000 && c <= 0x206f) || (c >= 0x3000 && c <= 0x303f) || c == 0xfeff) return false;
  return true;
}

// lowerAscii is c in lower case when it is an ASCII capital letter.
// @ts-ignore: decorator
@inline
function lowerAscii(c: i32): i32 {
  return c >= 0x41 && c <= 0x5a ? c | 0x20 : c;
}

// charAt is text.charCodeAt(i) for 0 <= i < text.length, without the
// bounds check and call of charCodeAt (the loops here check their bounds).
// @ts-ignore: decorator
@inline
function charAt(text: string, i: i32): i32 {
  return <i32>load<u16>(changetype<usize>(text) + (<usize>i << 1));
}

const FNV_OFFSET: u32 = 2166136261;
const FNV_PRIME: u32 = 16777619;

// A banned word or phrase.
class Entry {
  constructor(
    public original: string, // as given, for the result
    public lower: string, // trimmed, in lower case
    public firstLen: i32, // length of its first word (0: it starts with punctuation)
    public hash: u32, // hash of its first word
  ) {}
}

function hashOf(s: string, from: i32, to: i32): u32 {
  let h = FNV_OFFSET;
  for (let i = from; i < to; i++) h = (h ^ <u32>s.charCodeAt(i)) * FNV_PRIME;
  return h;
}

// matchesAt reports whether text holds entry (in lower case) at `at`,
// followed by a word boundary. With fold, ASCII capitals of text compare as
// lower case.
function matchesAt(text: string, at: i32, entry: string, fold: bool): bool {
  const m = entry.length;
  if (at + m > text.length) return false;
  for (let k = 0; k < m; k++) {
    let c = charAt(text, at + k);
    if (fold) c = lowerAscii(c);
    if (c != charAt(entry, k)) return false;
  }
  const end = at + m;
  return end >= text.length || !isWordChar(entry.charCodeAt(m - 1)) || !isWordChar(charAt(text, end));
}

// scan marks in found the entries that text holds. With fold (ASCII text
// expected), capitals are folded on the fly; it returns false as soon as it
// meets a non-ASCII character, for the caller to lower-case the text and
// scan again without folding.
function scan(text: string, fold: bool, entries: Array<Entry>, head: Int32Array, next: Int32Array, found: Array<bool>): bool {
  const n = text.length;
  const mask = head.length - 1;
  let i = 0;
  while (i < n) {
    const c = charAt(text, i);
    if (fold && c >= 0x80) return false;
    if (!isWordChar(c)) {
      i++;
      continue;
    }
    // A word starts at i: hash it up to its end.
    let h = FNV_OFFSET;
    let j = i;
    while (j < n) {
      let d = charAt(text, j);
      if (fold) {
        if (d >= 0x80) return false;
        d = lowerAscii(d);
      }
      if (!isWordChar(d)) break;
      h = (h ^ <u32>d) * FNV_PRIME;
      j++;
    }
    for (let e = head[<i32>(h & <u32>mask)]; e >= 0; e = next[e]) {
      const entry = entries[e];
      if (!found[e] && entry.hash == h && entry.firstLen == j - i && matchesAt(text, i, entry.lower, fold)) {
        found[e] = true;
      }
    }
    i = j;
  }
  return true;
}

// scanPunct marks the entries that start with punctuation ("#tag",
// "@here"): they are looked for one by one.
function scanPunct(text: string, fold: bool, entries: Array<Entry>, found: Array<bool>): void {
  for (let e = 0; e < entries.length; e++) {
    const entry = entries[e];
    if (entry.firstLen > 0 || found[e]) continue;
    const first = entry.lower.charCodeAt(0);
    for (let at = 0; at < text.length; at++) {
      let c = text.charCodeAt(at);
      if (fold) c = lowerAscii(c);
      if (c == first && matchesAt(text, at, entry.lower, fold)) {
        found[e] = true;
        break;
      }
    }
  }
}

function check(input: Input): Output {
  const words = input.paramStrings("words");
  const entries = new Array<Entry>();
  for (let i = 0; i < words.length; i++) {
    const lower = words[i].trim().toLowerCase();
    if (lower.length == 0) continue;
    let firstLen = 0;
    while (firstLen < lower.length && isWordChar(lower.charCodeAt(firstLen))) firstLen++;
    entries.push(new Entry(words[i], lower, firstLen, hashOf(lower, 0, firstLen)));
  }

  const found = new Array<bool>(entries.length);
  if (entries.length > 0) {
    // The table: first-word hash -> chain of entries.
    let size = 8;
    while (size < 2 * entries.length) size <<= 1;
    const head = new Int32Array(size).fill(-1);
    const next = new Int32Array(entries.length).fill(-1);
    let punct = false;
    for (let e = 0; e < entries.length; e++) {
      if (entries[e].firstLen == 0) {
        punct = true;
        continue;
      }
      const b = <i32>(entries[e].hash & <u32>(size - 1));
      next[e] = head[b];
      head[b] = e;
    }
    let text = input.text();
    let fold = true;
    if (!scan(text, true, entries, head, next, found)) {
      // Not plain ASCII: lower-case it once with the full Unicode mapping.
      text = text.toLowerCase();
      fold = false;
      for (let e = 0; e < found.length; e++) found[e] = false;
      scan(text, false, entries, head, next, found);
    }
    if (punct) scanPunct(text, fold, entries, found);
  }

  // The words found, in the order of the parameter, once each.
  const matched = new Array<string>();
  for (let e = 0; e < entries.length; e++) {
    if (found[e] && !matched.includes(entries[e].original)) matched.push(entries[e].original);
  }
  const data = Value.object().set("matched", Value.fromStrings(matched));
  if (matched.length == 0) return Output.pass(data);
  return Output.fail("banned words found: " + matched.join(", "), data);
}

handle(check);
