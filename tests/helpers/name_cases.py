"""Names a reader cannot tell from "First Model" (each must be refused), and names that differ (each
must be accepted), as test data for `leaderboard.text.submitted_names` and the Space's submit.

The first twelve look-alikes are the ones a probe of the Space got verified and ranked beside
"First Model" (U+23D0 was measured 99.1 px wide in Chromium against 98.9 px for "l"); the rest
cover the other ways text can look the same: homoglyphs of other scripts, compatibility forms
(fullwidth, mathematical, circled), invisible and bidi characters, marks, case, spacing and
punctuation, and the vertical strokes.
"""

from __future__ import annotations

OWNER_NAME = "First Model"

PROBE_LOOKALIKES: tuple[str, ...] = (
    "First Mode\u23d0",  # VERTICAL LINE EXTENSION
    "First Mode\u2502",  # BOX DRAWINGS LIGHT VERTICAL
    "First Mode\u2503",  # BOX DRAWINGS HEAVY VERTICAL
    "First Mode\u2758",  # LIGHT VERTICAL BAR
    "First Mode\uffe8",  # HALFWIDTH FORMS LIGHT VERTICAL
    "First Mode\ua781",  # LATIN SMALL LETTER TURNED L
    "First \uab87odel",  # CHEROKEE SMALL LETTER LU
    "First Mo\ua77ael",  # LATIN SMALL LETTER INSULAR D
    "Firs\u115ft Model",  # HANGUL CHOSEONG FILLER inside a word
    "Fi\u1160rst Model",  # HANGUL JUNGSEONG FILLER inside a word
    "First Mode\u04cf",  # CYRILLIC SMALL LETTER PALOCHKA
    "F\u0456rst Model",  # CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I
)

LOOKALIKES: tuple[str, ...] = PROBE_LOOKALIKES + (
    # case, spacing, punctuation
    "first model",
    "FIRST MODEL",
    "FirstModel",
    "first_model",
    "First-Model",
    "First.Model",
    "First:Model",
    "First+Model",
    "First/Model",
    "(First Model)",
    "[First Model]",
    "First, Model",
    "First & Model",
    "First  Model",
    # vertical strokes and digits
    "F1rst Model",
    "Flrst Model",
    "FIrst Model",
    "First ModeI",
    "First Mode1",
    "F1RST MODE|",
    "First M0del",
    "First rnodel",
    "First Mode\u0131",  # dotless i
    "First Mode\u2160",  # ROMAN NUMERAL ONE
    # other scripts' homoglyphs
    "First M\u043edel",  # Cyrillic о
    "First Mod\u0435l",  # Cyrillic е
    "First \u039codel",  # Greek capital mu
    "First \u041c\u043edel",  # Cyrillic М and о
    "\u03dcirst Model",  # Greek digamma
    "Fi\u0280st Model",  # small capital R
    "Fi\u026ast Model",  # small capital I
    "\ua730irst Model",  # small capital F
    "Fir\ua785t Model",  # insular s
    "First \u13b7ODEL",  # Cherokee
    # compatibility forms (NFKC: the same name)
    "\uff26\uff49\uff52\uff53\uff54 \uff2d\uff4f\uff44\uff45\uff4c",  # fullwidth
    "\U0001d405\U0001d422\U0001d42b\U0001d42c\U0001d42d \U0001d40c\U0001d428\U0001d41d\U0001d41e\U0001d425",  # bold
    "\U0001d509\U0001d526\U0001d52f\U0001d530\U0001d531 Model",  # fraktur
    "\U0001d675\U0001d692\U0001d69b\U0001d69c\U0001d69d \U0001d67c\U0001d698\U0001d68d\U0001d68e\U0001d695",  # mono
    "\u24bbirst Model",  # circled F
    "Fi\u02b3st Model",  # modifier letter small r
    "First\u1d39odel",  # modifier letter capital M
    "First\u00a0Model",  # no-break space
    "First\u3000Model",  # ideographic space
    "First\u2003Model",  # em space
    # marks
    "F\u00edrst Model",
    "First M\u00f6del",
    "F\u00efrst Model",
    "Fi\u0155st Model",
    "First Mod\u00e8l",
    "Fi\u0307rst Model",  # combining dot above
    # invisible and bidi characters
    "First\u200bModel",  # zero-width space
    "First\u00adModel",  # soft hyphen
    "First Model\u200d",  # zero-width joiner
    "\ufeffFirst Model",  # byte order mark
    "First\u2060Model",  # word joiner
    "First\u180eModel",  # Mongolian vowel separator
    "First\u3164Model",  # Hangul filler
    "First\uffa0Model",  # halfwidth Hangul filler
    "First \u202eledoM",  # right-to-left override
    "First \u2066Model\u2069",  # left-to-right isolate
)

# Different names, each in one script, none a look-alike of another or of "First Model" (nor of a
# paper row): every one is accepted.
DISTINCT: tuple[str, ...] = (
    "Second Model",
    "First Modal",
    "Fist Model",
    "First Models",
    "First Model 2",
    "First Model v2",
    "Model First",
    "FLUX.1 [dev]",
    "DALL\u00b7E 3",
    "Stable Diffusion 3.5 (Large)",
    "Janus-Pro-7B",
    "SDXL-Turbo",
    "Kandinsky 3",
    "PixArt-Sigma",
    "Playground v2.5",
    "W\u00fcrstchen",
    "DeepFloyd IF",
    "Lumina-Next",
    "Hunyuan-DiT",
    "Sana 1.6B",
    "CogView4",
    "Emu3",
    "Show-o",
    "OmniGen",
    "SD 2.1",
    "SD 3 Medium",
    "\u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03cc \u03bc\u03bf\u03bd\u03c4\u03ad\u03bb\u03bf",  # Greek
    "\u0420\u0443\u0441\u0441\u043a\u0430\u044f \u043c\u043e\u0434\u0435\u043b\u044c",  # Russian
    "\u753b\u50cf\u30e2\u30c7\u30eb v2",  # Japanese with Latin
    "\ud55c\uad6d\uc5b4 \ubaa8\ub378",  # Korean
    "\u4e2d\u6587\u6a21\u578b",  # Chinese
    "Mod\u00e8le fran\u00e7ais",
    "O'Brien Diffusion",
)

# The paper's rows and look-alikes of them: reserved.
PAPER_LOOKALIKES: tuple[str, ...] = (
    "SD 1.5",
    "sd 1.5",
    "SD1.5",
    "SD 15",
    "SD-1.5",
    "SD 1.5 + NegationCLIP",
    "sd 1.5 negationclip",
)
