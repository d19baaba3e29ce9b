/**
 * Text read as JSON, or undefined when it is not JSON: for text from outside (a view's private
 * metadata, an answer's body) that a schema checks next, which then refuses `undefined` as it
 * refuses any other shape.
 */
export function safeJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
