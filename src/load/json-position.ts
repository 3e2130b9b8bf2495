/**
 * Offset of the first JSON syntax error in `text`, or undefined when it is valid. Node 20's JSON.parse messages do
 * not always say where they failed; dataset errors must name the line, so this small validator finds it.
 * Only called after JSON.parse has already failed, so speed does not matter.
 */
export function jsonErrorOffset(text: string): number | undefined {
  let pos = 0;
  class Stop extends Error {}
  const fail = (): never => {
    throw new Stop();
  };
  const skipSpace = () => {
    while (pos < text.length && ' \t\n\r'.includes(text[pos]!)) pos++;
  };
  const expect = (literal: string) => {
    if (text.startsWith(literal, pos)) pos += literal.length;
    else fail();
  };
  const string = () => {
    expect('"');
    while (pos < text.length && text[pos] !== '"') {
      if (text.charCodeAt(pos) < 0x20) fail();
      pos += text[pos] === '\\' ? 2 : 1;
    }
    expect('"');
  };
  const value = (): void => {
    skipSpace();
    const char = text[pos];
    if (char === '{') {
      pos++;
      skipSpace();
      if (text[pos] === '}') return void pos++;
      for (;;) {
        skipSpace();
        string();
        skipSpace();
        expect(':');
        value();
        skipSpace();
        if (text[pos] === ',') pos++;
        else return expect('}');
      }
    }
    if (char === '[') {
      pos++;
      skipSpace();
      if (text[pos] === ']') return void pos++;
      for (;;) {
        value();
        skipSpace();
        if (text[pos] === ',') pos++;
        else return expect(']');
      }
    }
    if (char === '"') return string();
    const literal = /^(?:true|false|null|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)/.exec(text.slice(pos, pos + 400));
    if (!literal) fail();
    pos += literal![0].length;
  };
  try {
    value();
    skipSpace();
    return pos < text.length ? pos : undefined;
  } catch (error) {
    if (error instanceof Stop) return pos;
    throw error;
  }
}
