#!/usr/bin/python3
"""gen_tok_corpus.py - dev-time: writes the tokenizer conformance corpus (deterministic, seed 4).

Usage: /usr/bin/python3 tools/gen_tok_corpus.py > tests/data/tokenizer/corpus.jsonl
Each row is {"text": ...}. Categories: English prose, code (Python, C, JSON), numbers, dates and
long digit runs, whitespace runs, tabs, CR/LF, CJK, Arabic, emoji with ZWJ sequences, combining
marks (NFC-sensitive), mixed-case contractions, special tokens inside text, random Unicode.
"""
import json
import random

R = random.Random(4)
WORDS = ("the of and to in is was that for it with as his on be at by had are but from or have an they which "
         "one you were her all she there would their we him been has when who will more no if out so said what up "
         "its about into than them can only other new some could time these two may then do first any my now such "
         "like our over man me even most made after also did many before must through back years where much your way "
         "well down should because each just those people Mr how too little state good very make world still own see "
         "men work long get here between both life being under never day same another know while last might us great "
         "old year off come since against go came right used take three tokenizer model reward judge policy gradient "
         "Hello World Paris London OpenAI HuggingFace naïve café résumé coöperate façade").split()
CONTR = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'VE", "'M", "'LL", "'D", "'Ll", "'rE"]
PY = ["def f(x):\n    return x * 2\n", "for i in range(10):\n\tprint(i, end='')\n", "class A(object):\n    pass\n",
      "import numpy as np\nx = np.zeros((3, 4), dtype=np.float32)\n", "if __name__ == '__main__':\n    main()\n",
      "lambda a, b: a**b // 3 % 7", "    # comment with    spaces\n", "@decorator\nasync def g(): await h()\n"]
C = ["int main(void) {\n    return 0;\n}\n", "for (int i = 0; i < n; i++) { a[i] += b[i] * c; }",
     "#include <stdio.h>\n#define MAX(a,b) ((a)>(b)?(a):(b))\n", "static inline uint64_t mix(uint64_t x) { return x ^ (x >> 31); }",
     "if (!p) {\r\n\treturn -1;\r\n}\r\n", "/* block\n * comment */\nchar *s = \"str\\n\";", "x->y.z[3] &= ~0xFFu;"]
JSONS = ['{"a": 1, "b": [true, false, null], "c": {"d": "e"}}', '[1.5e-10, -3, 0.0]', '{"key":"value","n":123456789}',
         '{\n  "indent": "two",\n  "list": [\n    1,\n    2\n  ]\n}']
CJK = ["你好，世界！", "日本語のテキストです。", "한국어 문장입니다.", "中文分词测试：机器学习与深度学习。", "東京は日本の首都です",
       "ｆｕｌｌｗｉｄｔｈ　ｔｅｘｔ", "漢字かなカナ混じり文", "我爱北京天安门123"]
AR = ["مرحبا بالعالم", "اللغة العربية جميلة", "١٢٣٤٥٦٧٨٩٠", "هذا نص تجريبي، مع علامات ترقيم؟", "שלום עולם", "Привет, мир!",
      "Ελληνικά κείμενα", "हिन्दी पाठ", "ภาษาไทย"]
EMOJI = ["👍", "👨‍👩‍👧‍👦", "🏳️‍🌈", "👩🏽‍💻", "❤️", "🇫🇷", "😀😃😄", "🧑‍🤝‍🧑", "✋🏿", "🤷‍♂️", "1️⃣", "©️", "👁️‍🗨️"]
COMB = ["e\u0301", "A\u030a", "n\u0303", "o\u0308\u0304", "\u1100\u1161\u11a8", "Å", "é", "\u0041\u0308\u0301",
        "ﬁ", "ℌ", "Ω", "\u0915\u094d\u0937", "i\u0307", "a\u0328\u0301", "\u0301start"]
WS = [" ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\r\n", "\r", " \n ", "\u00a0", "\u2003", "\u3000", "\u2028", "\u0085",
      "\u200b", "\ufeff", "\v", "\f"]
SPECIAL = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>", "<tool_call>", "<|begin_of_text|>",
           "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>", "<|end_of_text|>", "<|im_end", "<|im_start|", "<|fim_prefix|>",
           "<|reserved_special_token_5|>", "< |im_end|>", "<|IM_END|>"]


def prose():
    n = R.randint(3, 40)
    out = []
    for i in range(n):
        w = R.choice(WORDS)
        r = R.random()
        if r < 0.1: w = w.capitalize()
        elif r < 0.13: w = w.upper()
        elif r < 0.2: w += R.choice(CONTR)
        out.append(w)
        if R.random() < 0.1: out[-1] += R.choice([",", ".", ";", ":", "!", "?", "...", ")", "\"", "'"])
    return " ".join(out)


def number():
    k = R.randint(0, 9)
    if k == 0: return str(R.randint(0, 10 ** R.randint(1, 30)))
    if k == 1: return f"{R.uniform(-1e6, 1e6):.{R.randint(0, 8)}f}"
    if k == 2: return f"{R.randint(1900, 2100)}-{R.randint(1, 12):02d}-{R.randint(1, 28):02d}"
    if k == 3: return f"{R.randint(1, 12)}/{R.randint(1, 31)}/{R.randint(0, 99):02d} at {R.randint(0, 23)}:{R.randint(0, 59):02d}"
    if k == 4: return "".join(R.choice("0123456789") for _ in range(R.randint(20, 200)))
    if k == 5: return f"{R.randint(1, 999):,}".replace(",", R.choice([",", ".", " ", "\u202f"])) + str(R.randint(0, 999999))
    if k == 6: return f"{R.random():.3e}"
    if k == 7: return "v" + ".".join(str(R.randint(0, 20)) for _ in range(3))
    if k == 8: return f"${R.randint(0, 99999)}.{R.randint(0, 99):02d} or {R.randint(0, 100)}%"
    return "+" + str(R.randint(1, 99)) + " (" + str(R.randint(100, 999)) + ") " + str(R.randint(1000000, 9999999))


RANGES = [(0x20, 0x7e), (0xa0, 0x24f), (0x300, 0x36f), (0x370, 0x3ff), (0x400, 0x4ff), (0x590, 0x6ff), (0x900, 0x97f),
          (0xe00, 0xe7f), (0x1100, 0x11ff), (0x2000, 0x206f), (0x20a0, 0x20cf), (0x2100, 0x218f), (0x2190, 0x23ff),
          (0x2460, 0x24ff), (0x2500, 0x27bf), (0x3000, 0x30ff), (0x4e00, 0x4fff), (0xac00, 0xad00), (0xfe00, 0xfe0f),
          (0xff00, 0xffef), (0x1d400, 0x1d4ff), (0x1f300, 0x1f6ff), (0x1f900, 0x1f9ff), (0x10000, 0x1007f),
          (0xe0000, 0xe007f), (0xe000, 0xe00f)]


def rand_unicode():
    out = []
    for _ in range(R.randint(1, 40)):
        lo, hi = R.choice(RANGES)
        cp = R.randint(lo, hi)
        if 0xd800 <= cp <= 0xdfff: continue
        out.append(chr(cp))
    return "".join(out)


def piece():
    k = R.randint(0, 13)
    return [prose, number, lambda: R.choice(PY), lambda: R.choice(C), lambda: R.choice(JSONS), lambda: R.choice(CJK),
            lambda: R.choice(AR), lambda: R.choice(EMOJI), lambda: R.choice(COMB) + R.choice(WORDS), lambda: R.choice(WS) * R.randint(1, 12),
            lambda: R.choice(SPECIAL), rand_unicode, lambda: R.choice(WORDS) + R.choice(CONTR),
            lambda: R.choice(["DON'T", "we'LL", "I'M", "You'Re", "they'VE", "it'S", "she'D", "O'Neil", "rock'n'roll"])][k]()


def main():
    rows = []
    fixed = ["", " ", "\n", "\r\n", "a", "Hello", " Hello", "Hello world", "DON'T we'LL", "\t\tindented\n", "   trailing   ",
             "1234567890123", "<|im_start|>user\nhi<|im_end|>\n", "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>",
             "e\u0301 vs é", "👨‍👩‍👧‍👦 family", "x" * 300, " " * 100 + "x", "\n" * 50, "a\u0000b", "\u00a0\u00a0x"]
    rows += fixed
    while len(rows) < 2200:
        parts = [piece() for _ in range(R.randint(1, 6))]
        sep = R.choice(["", " ", "\n", " ", "\t", "\r\n", "  "])
        rows.append(sep.join(parts))
    for r in rows:
        print(json.dumps({"text": r}, ensure_ascii=False))


main()
