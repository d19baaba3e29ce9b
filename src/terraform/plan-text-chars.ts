/**
 * The lines of a resource block the plan text reader reads by character codes rather than by
 * patterns: its marker line (`-/+ resource "type" "name" {`), an attribute that forces a
 * replacement (`~ content = (sensitive value) # forces replacement`) and one that opens a heredoc
 * value (`~ content = <<-EOT`). Each reads what its pattern
 * would, with none of the pattern's backtracking and none of the match arrays and captured copies
 * a pattern makes for every line it reads.
 */
import { holdsLineTerminator, isSpace, isWordCharacter } from "./plan-text-lines.js";

/**
 * Where a marker line's type and name stand in it: the type from `typeFrom` to `typeTo`, the name
 * from `nameFrom` to `nameTo`. One per reader, written over for each marker line.
 */
export interface MarkerSpan {
  typeFrom: number;
  typeTo: number;
  nameFrom: number;
  nameTo: number;
}

export function createMarkerSpan(): MarkerSpan {
  return { typeFrom: 0, typeTo: 0, nameFrom: 0, nameTo: 0 };
}

/** The length of the symbol at `at` (`-/+`, `+/-`, `+`, `~`, `-`, and `<=` with `read`), or 0. */
function symbolLength(text: string, at: number, read: boolean): number {
  const code = text.charCodeAt(at);
  if (code === 0x2d || code === 0x2b) {
    // `-/+` or `+/-`, else `-` or `+` alone.
    const other = code === 0x2d ? 0x2b : 0x2d;
    return text.charCodeAt(at + 1) === 0x2f && text.charCodeAt(at + 2) === other ? 3 : 1;
  }
  if (code === 0x7e) return 1;
  return read && code === 0x3c && text.charCodeAt(at + 1) === 0x3d ? 2 : 0;
}

/**
 * Where the text after the symbol at `at` (of `length` characters) and the white space after it
 * starts; -1 when no white space follows the symbol.
 */
function afterSymbol(text: string, at: number, length: number): number {
  let after = at + length;
  while (isSpace(text.charCodeAt(after))) after += 1;
  return after === at + length ? -1 : after;
}

/**
 * Whether the line whose text starts at `start` (after its white space) is a marker line, as
 * `^\s*(?:(-\/\+|\+\/-|<=|[+~-])\s+)?(resource|data) "([^"]+)" "([^"]+)" \{` reads it; if it is,
 * `span` holds where its type and name are. A symbol must have white space after it, and a type
 * and a name run each from its `"` to the next, holding at least one character.
 */
export function readMarker(text: string, start: number, span: MarkerSpan): boolean {
  let at = start;
  const symbol = symbolLength(text, at, true);
  if (symbol > 0) {
    at = afterSymbol(text, at, symbol);
    if (at === -1) return false;
  }
  if (text.startsWith('resource "', at)) at += 10;
  else if (text.startsWith('data "', at)) at += 6;
  else return false;
  const typeTo = text.indexOf('"', at);
  if (typeTo <= at || text.charCodeAt(typeTo + 1) !== 0x20 || text.charCodeAt(typeTo + 2) !== 0x22)
    return false;
  const nameFrom = typeTo + 3;
  const nameTo = text.indexOf('"', nameFrom);
  if (nameTo <= nameFrom || text.charCodeAt(nameTo + 1) !== 0x20) return false;
  if (text.charCodeAt(nameTo + 2) !== 0x7b) return false;
  span.typeFrom = at;
  span.typeTo = typeTo;
  span.nameFrom = nameFrom;
  span.nameTo = nameTo;
  return true;
}

/** Whether the marker line's symbol, at `start`, is one of a replacement: `-/+` or `+/-`. */
export function markerReplaces(text: string, start: number): boolean {
  return symbolLength(text, start, false) === 3;
}

/** Longer than this, a type and name are looked for in an address by `includes`. */
const SHORT_NAME = 64;

/** Whether `text` holds, at `at`, the `length` characters of `source` from `from`. */
function sameAt(text: string, at: number, source: string, from: number, length: number): boolean {
  for (let index = 0; index < length; index += 1) {
    if (text.charCodeAt(at + index) !== source.charCodeAt(from + index)) return false;
  }
  return true;
}

/**
 * Whether `address` holds the marker's `type.name` (`span`, in `text`) anywhere, as
 * `address.includes(`${type}.${name}`)` finds it, compared where it stands rather than cut out and
 * joined: for a type and name of the usual length. Longer ones (a hostile line) are joined and
 * searched for, a search that takes time linear in the address.
 */
export function holdsTypeAndName(address: string, text: string, span: MarkerSpan): boolean {
  const { typeFrom, typeTo, nameFrom, nameTo } = span;
  const typeLength = typeTo - typeFrom;
  const nameLength = nameTo - nameFrom;
  if (typeLength + nameLength > SHORT_NAME) {
    return address.includes(`${text.slice(typeFrom, typeTo)}.${text.slice(nameFrom, nameTo)}`);
  }
  const last = address.length - typeLength - 1 - nameLength;
  for (let at = 0; at <= last; at += 1) {
    if (
      sameAt(address, at, text, typeFrom, typeLength) &&
      address.charCodeAt(at + typeLength) === 0x2e &&
      sameAt(address, at + typeLength + 1, text, nameFrom, nameLength)
    )
      return true;
  }
  return false;
}

const FORCES = "forces replacement";

/**
 * Whether the line, without white space at its end, ends with a comment that the attribute
 * forces a replacement: what `#\s*forces replacement\s*$` finds in it.
 */
export function forcesReplacement(text: string): boolean {
  if (!text.endsWith(FORCES)) return false;
  let at = text.length - FORCES.length - 1;
  while (at >= 0 && isSpace(text.charCodeAt(at))) at -= 1;
  return text.charCodeAt(at) === 0x23;
}

/** `[\w.-]`. */
function isNameCharacter(code: number): boolean {
  return isWordCharacter(code) || code === 0x2e || code === 0x2d;
}

/**
 * Where the quoted name whose `"` is at `at` ends, after its closing `"`, as
 * `"(?:[^"\\]|\\.)*"` reads it: a backslash takes the character after it, but for a line
 * terminator; -1 when it does not end.
 */
function quotedEnd(text: string, at: number): number {
  let index = at + 1;
  for (;;) {
    if (index >= text.length) return -1;
    const code = text.charCodeAt(index);
    if (code === 0x22) return index + 1;
    if (code === 0x5c) {
      const next = text.charCodeAt(index + 1);
      if (index + 1 >= text.length || next === 0x0a || next === 0x0d) return -1;
      if (next === 0x2028 || next === 0x2029) return -1;
      index += 2;
    } else {
      index += 1;
    }
  }
}

/**
 * Where the attribute name at `at` ends, a quoted one or one of `[\w.-]`, when white space and
 * `=` or `{` follow it; -1 when none does.
 */
function nameEnd(text: string, at: number): number {
  let end = at;
  if (text.charCodeAt(at) === 0x22) {
    end = quotedEnd(text, at);
    if (end === -1) return -1;
  } else {
    while (isNameCharacter(text.charCodeAt(end))) end += 1;
    if (end === at) return -1;
  }
  let after = end;
  while (isSpace(text.charCodeAt(after))) after += 1;
  const code = text.charCodeAt(after);
  return code === 0x3d || code === 0x7b ? end : -1;
}

/**
 * The name of the attribute on the line whose text starts at `start` (after its white space), as
 * `^\s*(?:(?:-\/\+|\+\/-|[+~-])\s+)?("(?:[^"\\]|\\.)*"|[\w.-]+)\s*(?:=|\{)` captures it: after a
 * symbol and white space if a name follows them, else from the start (`- = 1` names `-`); "" when
 * the line names none.
 */
export function attributeName(text: string, start: number): string {
  const symbol = symbolLength(text, start, false);
  if (symbol > 0) {
    const at = afterSymbol(text, start, symbol);
    const end = at === -1 ? -1 : nameEnd(text, at);
    if (end !== -1) return text.slice(at, end);
  }
  const end = nameEnd(text, start);
  return end === -1 ? "" : text.slice(start, end);
}

/** `[A-Za-z_]`: a character a heredoc's word can start with. */
function isWordStart(code: number): boolean {
  return isWordCharacter(code) && (code < 0x30 || code > 0x39);
}

/**
 * Whether white space, then a comment running to the line's end at `end`, follow `at`: what
 * `\s+#.*$` matches there (`.` takes no line terminator).
 */
function commentToEnd(text: string, at: number, end: number): boolean {
  let index = at;
  while (index < end && isSpace(text.charCodeAt(index))) index += 1;
  if (index === at || index === end || text.charCodeAt(index) !== 0x23) return false;
  return !holdsLineTerminator(text, index + 1, end);
}

/**
 * The word that ends the heredoc the line opens (`<<EOT`, `<<-EOT`, `<<~EOT`, perhaps with a
 * comment after), as `<<[-~]?([A-Za-z_]\w*)(?:\s+#.*)?$` captures it: after the first `<<` whose
 * word ends the line or is followed by white space and a comment to its end; undefined when the
 * line opens none.
 */
export function heredocOpener(text: string): string | undefined {
  return heredocOpenerIn(text, 0, text.length);
}

/** `heredocOpener` of the line of `text` from `from` to `end`, read where it stands. */
export function heredocOpenerIn(text: string, from: number, end: number): string | undefined {
  for (let at = text.indexOf("<<", from); at !== -1 && at < end; at = text.indexOf("<<", at + 1)) {
    let start = at + 2;
    const code = text.charCodeAt(start);
    if (start < end && (code === 0x2d || code === 0x7e)) start += 1;
    if (start >= end || !isWordStart(text.charCodeAt(start))) continue;
    let to = start + 1;
    while (to < end && isWordCharacter(text.charCodeAt(to))) to += 1;
    if (to === end || commentToEnd(text, to, end)) return text.slice(start, to);
  }
  return undefined;
}
