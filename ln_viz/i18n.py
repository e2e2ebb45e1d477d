"""Every user-facing sentence of ln-viz, in English and Korean, in one place.

The engine raises errors carrying a message key and its parameters; the CLI prints the English text,
the app prints the text of the language the user picked. Pages never hard-code a sentence: they call
`t(key, lang, **params)`. `tests/test_i18n.py` checks both catalogs have the same keys and
placeholders.
"""

from __future__ import annotations

import string

LANGS = ("en", "ko")
DEFAULT_LANG = "en"

EN: dict[str, str] = {
    # --- configuration errors (field names are the RunConfig / CLI names) -------------------
    "err.not_a_number": "{field} must be a number, got {value!r}.",
    "err.not_an_integer": "{field} must be a whole number, got {value!r}.",
    "err.not_finite": "{field} must be a finite number, got {value}.",
    "err.range": "{field} must be between {lo} and {hi}, got {value}.",
    "err.positive": "{field} must be greater than 0, got {value}.",
    "err.non_negative": "{field} must be 0 or more, got {value}.",
    "err.choice": "{field} must be one of {choices}, got {value!r}.",
    "err.lr_too_high": "lr must be at most {hi} (learning rates above that only measure overflow), got {value}.",
    "err.heads_divide": "d_model ({d_model}) must be divisible by heads ({heads}); try d_model={suggest}.",
    "err.warmup_longer": "warmup_steps ({warmup}) is longer than the run (steps={steps}); use at most {steps}.",
    "err.memory": (
        "this configuration needs about {need} of memory to train (batch {batch}, seq_len {seq}, "
        "depth {depth}, d_model {d_model}), more than the {limit} allowed; lower batch_size or seq_len."
    ),
    "err.device_cuda": "device 'cuda' was asked for but no CUDA device is present; use device='cpu'.",
    "err.unknown_preset": "unknown preset {value!r}; choose one of {choices}.",
    "err.user_text_missing": "corpus 'user' needs user_text (a string or a file).",
    "err.text_empty": "the text is empty; give at least {need} characters.",
    "err.text_not_utf8": "the file is not UTF-8 text (byte {pos} cannot be decoded); save it as UTF-8.",
    "err.text_binary": "the text looks binary ({count} control characters); give plain text.",
    "err.text_too_short": (
        "the text has {have} characters but seq_len {seq} needs at least {need}; give more text or lower seq_len."
    ),
    "err.text_too_large": "the text is {have} characters, above the limit of {limit}; give a shorter text.",
    "err.text_vocab": "the text has {have} distinct characters, above the limit of {limit}.",
    "err.file_missing": "file {path} does not exist.",
    "err.file_too_large": "file {path} is {have} bytes, above the limit of {limit} bytes.",
    # --- run store and run files (store.py, runfile.py) ------------------------------------------
    "err.store_not_sqlite": "{path} is not an ln-viz run store (not an SQLite database); give another --store path.",
    "err.store_open": "cannot open the run store {path} ({reason}); check the path and its permissions.",
    "err.store_newer": (
        "the run store {path} was written by a newer ln-viz (schema version {have}, this one reads up to "
        "{know}); upgrade ln-viz or use another --store path."
    ),
    "err.store_missing": "there is no run store at {path}; train with --store {path} to create one.",
    "err.store_old_readonly": (
        "the run store {path} has an older schema; open it once for writing (e.g. `python -m ln_viz runs list`) "
        "to upgrade it."
    ),
    "err.store_readonly": "the run store {path} was opened read-only; open it for writing to change it.",
    "err.run_not_found": "there is no run {run_id} in {path}; `python -m ln_viz runs list` shows the run ids.",
    "err.run_live": "run {run_id} is still being written by process {pid}; stop it before deleting it.",
    "err.label_too_long": "a label must be at most {limit} characters, got {have}.",
    "err.runfile_unpacked_too_large": "file {path} unpacks to more than {limit} bytes, too large for a run file.",
    "err.runfile_gzip": "file {path} is not a valid gzip file (it may be truncated); export the run again.",
    "err.runfile_json": "file {path} is not valid JSON ({reason}); it may be truncated or not a run file.",
    "err.runfile_format": "file {path} is not an ln-viz run file (its format is {value!r}, expected 'ln-viz-run').",
    "err.runfile_version_newer": (
        "file {path} is run file version {version}, newer than this ln-viz reads (up to {know}); upgrade ln-viz."
    ),
    "err.runfile_version": "file {path} has an unknown run file version {value!r}; expected a whole number from 1 to {know}.",
    "err.runfile_field": "file {path}: {where} is missing or is not of type {expected}.",
    "err.runfile_config": "file {path} holds an invalid run configuration: {reason}",
    "err.runfile_too_many_steps": "file {path} has {have} steps but its config says steps={steps}; it is not a run ln-viz wrote.",
    "err.runfile_steps": "file {path}: steps must be whole numbers increasing from 1 to at most {steps}, found {value} after {prev}.",
    "err.runfile_length": "file {path}: {where} has {have} values but the run has {want} steps.",
    "err.runfile_probe_step": "file {path}: probe step {value} is not one of the run's steps.",
    "err.runfile_shape": "file {path}: probe array {name} has shape {have}, but the run's header needs {want}.",
    "err.runfile_array": "file {path}: probe array {name} cannot be read as float32 data of shape {want}.",
    "err.runfile_not_finite": "file {path}: {where} must hold finite numbers, found {value}.",
    "err.runfile_range": "file {path}: {where} must be between {lo} and {hi}, found {value}.",
    "err.export_not_dir": "--out {path} is a file; csv and parquet exports write a folder of tables, so give a folder.",
    "err.export_too_large": (
        "run {run_id} would make a run file of {have} bytes, above the {limit} bytes an import accepts; keep fewer "
        "probe steps with --probe-stride."
    ),
    # --- run messages ---------------------------------------------------------------------------
    "msg.diverged": "The loss or a gradient became infinite or NaN at this step: the run diverged.",
    "msg.stalled": (
        "The loss has not got below the unigram loss (predicting letter frequencies only): the model is not learning."
    ),
    "msg.interrupted": (
        "The process training this run ended before the run did (closed, crashed or killed); the steps stored "
        "until then are kept."
    ),
    # --- presets: what the user should see -----------------------------------------------------
    "preset.post-ln-no-warmup": (
        "Post-LN, lr 3e-3, no warm-up: the loss stays flat on the unigram line; the model never gets past letter "
        "frequencies."
    ),
    "preset.post-ln-warmup": (
        "The same Post-LN model with 100 warm-up steps: once the learning rate has ramped up, the loss falls "
        "well below the unigram line."
    ),
    "preset.pre-ln-no-warmup": (
        "Pre-LN at the same learning rate, no warm-up: the loss drops at once and the gradient norms stay even "
        "across layers."
    ),
    "preset.deep-pre-ln": (
        "24 Pre-LN layers without warm-up still train; watch the residual stream widen layer by layer."
    ),
    "preset.deep-post-ln": (
        "24 Post-LN layers without warm-up: the gradients are largest next to the output and the loss stalls."
    ),
    "preset.deepnorm": (
        "DeepNorm (Post-LN with an up-weighted residual and a down-scaled init) trains without warm-up."
    ),
    "preset.peri-ln": (
        "Peri-LN normalises each sub-layer's input and output: it trains without warm-up and keeps the "
        "residual stream tame."
    ),
    "preset.no-norm": (
        "No normalisation at all, as a control: nothing reins in the activations or the gradients."
    ),
}

KO: dict[str, str] = {
    "err.not_a_number": "{field}은(는) 숫자여야 합니다. 입력값: {value!r}.",
    "err.not_an_integer": "{field}은(는) 정수여야 합니다. 입력값: {value!r}.",
    "err.not_finite": "{field}은(는) 유한한 수여야 합니다. 입력값: {value}.",
    "err.range": "{field}은(는) {lo}에서 {hi} 사이여야 합니다. 입력값: {value}.",
    "err.positive": "{field}은(는) 0보다 커야 합니다. 입력값: {value}.",
    "err.non_negative": "{field}은(는) 0 이상이어야 합니다. 입력값: {value}.",
    "err.choice": "{field}은(는) {choices} 중 하나여야 합니다. 입력값: {value!r}.",
    "err.lr_too_high": "lr은(는) {hi} 이하여야 합니다 (그보다 크면 오버플로만 측정됩니다). 입력값: {value}.",
    "err.heads_divide": "d_model({d_model})은(는) heads({heads})로 나누어떨어져야 합니다. d_model={suggest}을(를) 써 보세요.",
    "err.warmup_longer": "warmup_steps({warmup})가 전체 학습(steps={steps})보다 깁니다. {steps} 이하로 설정하세요.",
    "err.memory": (
        "이 설정은 학습에 약 {need}의 메모리가 필요합니다 (batch {batch}, seq_len {seq}, depth {depth}, "
        "d_model {d_model}). 허용치 {limit}를 넘으므로 batch_size나 seq_len을 줄이세요."
    ),
    "err.device_cuda": "device 'cuda'를 요청했지만 CUDA 장치가 없습니다. device='cpu'를 쓰세요.",
    "err.unknown_preset": "알 수 없는 프리셋 {value!r}입니다. {choices} 중에서 고르세요.",
    "err.user_text_missing": "corpus 'user'에는 user_text(문자열이나 파일)가 필요합니다.",
    "err.text_empty": "텍스트가 비어 있습니다. 최소 {need}자 이상 넣으세요.",
    "err.text_not_utf8": "파일이 UTF-8 텍스트가 아닙니다 ({pos}번째 바이트를 읽을 수 없음). UTF-8로 저장하세요.",
    "err.text_binary": "텍스트가 바이너리로 보입니다 (제어 문자 {count}개). 일반 텍스트를 넣으세요.",
    "err.text_too_short": (
        "텍스트는 {have}자이지만 seq_len {seq}에는 최소 {need}자가 필요합니다. 텍스트를 늘리거나 seq_len을 줄이세요."
    ),
    "err.text_too_large": "텍스트가 {have}자로, 한도 {limit}자를 넘습니다. 더 짧은 텍스트를 넣으세요.",
    "err.text_vocab": "텍스트의 서로 다른 문자가 {have}개로, 한도 {limit}개를 넘습니다.",
    "err.file_missing": "파일 {path}이(가) 없습니다.",
    "err.file_too_large": "파일 {path}은(는) {have}바이트로, 한도 {limit}바이트를 넘습니다.",
    "err.store_not_sqlite": "{path}은(는) ln-viz 실행 저장소가 아닙니다 (SQLite 데이터베이스가 아님). 다른 --store 경로를 주세요.",
    "err.store_open": "실행 저장소 {path}을(를) 열 수 없습니다 ({reason}). 경로와 권한을 확인하세요.",
    "err.store_newer": (
        "실행 저장소 {path}은(는) 더 새로운 ln-viz가 기록했습니다 (스키마 버전 {have}, 이 버전은 {know}까지 읽음). "
        "ln-viz를 업그레이드하거나 다른 --store 경로를 쓰세요."
    ),
    "err.store_missing": "{path}에 실행 저장소가 없습니다. --store {path}로 학습하면 만들어집니다.",
    "err.store_old_readonly": (
        "실행 저장소 {path}의 스키마가 오래되었습니다. 쓰기 모드로 한 번 열어 (예: `python -m ln_viz runs list`) "
        "업그레이드하세요."
    ),
    "err.store_readonly": "실행 저장소 {path}을(를) 읽기 전용으로 열었습니다. 바꾸려면 쓰기 모드로 여세요.",
    "err.run_not_found": "{path}에 실행 {run_id}이(가) 없습니다. `python -m ln_viz runs list`로 실행 번호를 확인하세요.",
    "err.run_live": "실행 {run_id}은(는) 아직 프로세스 {pid}가 기록 중입니다. 지우기 전에 멈추세요.",
    "err.label_too_long": "라벨은 최대 {limit}자여야 합니다. 입력: {have}자.",
    "err.runfile_unpacked_too_large": "파일 {path}은(는) 압축을 풀면 {limit}바이트를 넘어, 실행 파일로 보기에 너무 큽니다.",
    "err.runfile_gzip": "파일 {path}은(는) 올바른 gzip 파일이 아닙니다 (잘렸을 수 있음). 실행을 다시 내보내세요.",
    "err.runfile_json": "파일 {path}은(는) 올바른 JSON이 아닙니다 ({reason}). 잘렸거나 실행 파일이 아닐 수 있습니다.",
    "err.runfile_format": "파일 {path}은(는) ln-viz 실행 파일이 아닙니다 (format이 {value!r}, 'ln-viz-run'이어야 함).",
    "err.runfile_version_newer": (
        "파일 {path}은(는) 실행 파일 버전 {version}으로, 이 ln-viz가 읽는 버전({know}까지)보다 새롭습니다. "
        "ln-viz를 업그레이드하세요."
    ),
    "err.runfile_version": "파일 {path}의 실행 파일 버전 {value!r}을(를) 알 수 없습니다. 1에서 {know} 사이의 정수여야 합니다.",
    "err.runfile_field": "파일 {path}: {where}이(가) 없거나 {expected} 형식이 아닙니다.",
    "err.runfile_config": "파일 {path}의 실행 설정이 올바르지 않습니다: {reason}",
    "err.runfile_too_many_steps": (
        "파일 {path}에는 {have}개 스텝이 있지만 설정은 steps={steps}입니다. ln-viz가 기록한 실행이 아닙니다."
    ),
    "err.runfile_steps": "파일 {path}: 스텝은 1부터 최대 {steps}까지 증가하는 정수여야 하는데, {prev} 다음에 {value}이(가) 있습니다.",
    "err.runfile_length": "파일 {path}: {where}에 값이 {have}개 있지만 실행의 스텝은 {want}개입니다.",
    "err.runfile_probe_step": "파일 {path}: 프로브 스텝 {value}은(는) 실행의 스텝이 아닙니다.",
    "err.runfile_shape": "파일 {path}: 프로브 배열 {name}의 모양이 {have}이지만, 실행 헤더에 따르면 {want}이어야 합니다.",
    "err.runfile_array": "파일 {path}: 프로브 배열 {name}을(를) 모양 {want}의 float32 데이터로 읽을 수 없습니다.",
    "err.runfile_not_finite": "파일 {path}: {where}에는 유한한 수만 있어야 하는데, {value}이(가) 있습니다.",
    "err.runfile_range": "파일 {path}: {where}은(는) {lo}에서 {hi} 사이여야 하는데, {value}이(가) 있습니다.",
    "err.export_not_dir": "--out {path}은(는) 파일입니다. csv와 parquet 내보내기는 표 폴더를 쓰므로 폴더를 주세요.",
    "err.export_too_large": (
        "실행 {run_id}을(를) 내보내면 {have}바이트가 되어, 가져오기 한도 {limit}바이트를 넘습니다. "
        "--probe-stride로 프로브 스텝을 줄이세요."
    ),
    "msg.diverged": "이 스텝에서 손실이나 그래디언트가 무한대 또는 NaN이 되었습니다: 학습이 발산했습니다.",
    "msg.stalled": "손실이 유니그램 손실(글자 빈도만 맞히는 수준) 아래로 내려가지 않습니다: 모델이 배우지 못하고 있습니다.",
    "msg.interrupted": "이 실행을 학습하던 프로세스가 실행보다 먼저 끝났습니다 (닫힘, 충돌, 강제 종료). 그때까지 저장된 스텝은 남아 있습니다.",
    "preset.post-ln-no-warmup": (
        "Post-LN, 학습률 3e-3, 웜업 없음: 손실이 유니그램 선에 평평하게 머뭅니다. 모델이 글자 빈도 이상을 배우지 못합니다."
    ),
    "preset.post-ln-warmup": (
        "같은 Post-LN 모델에 웜업 100스텝: 학습률이 다 오르고 나면 손실이 유니그램 선 아래로 한참 내려갑니다."
    ),
    "preset.pre-ln-no-warmup": (
        "같은 학습률의 Pre-LN, 웜업 없음: 손실이 곧바로 내려가고 그래디언트 노름이 층마다 고르게 유지됩니다."
    ),
    "preset.deep-pre-ln": "웜업 없는 24층 Pre-LN도 학습됩니다. 잔차 스트림이 층마다 넓어지는 것을 보세요.",
    "preset.deep-post-ln": "웜업 없는 24층 Post-LN: 출력 가까운 층의 그래디언트가 가장 크고, 손실이 멈춰 있습니다.",
    "preset.deepnorm": "DeepNorm(잔차에 가중치를 키우고 초기화를 줄인 Post-LN)은 웜업 없이도 학습됩니다.",
    "preset.peri-ln": "Peri-LN은 각 서브층의 입력과 출력을 정규화합니다. 웜업 없이 학습되고 잔차 스트림이 안정적입니다.",
    "preset.no-norm": "정규화가 전혀 없는 대조군: 활성값과 그래디언트를 잡아 줄 것이 없습니다.",
}

CATALOGS: dict[str, dict[str, str]] = {"en": EN, "ko": KO}


def t(key: str, lang: str = DEFAULT_LANG, **params: object) -> str:
    """The sentence `key` in `lang`, with `params` filled in. Unknown languages fall back to English."""
    catalog = CATALOGS.get(lang, EN)
    template = catalog.get(key)
    if template is None:
        template = EN[key]  # a missing key is our bug: KeyError names it
    return template.format(**params)


def placeholders(template: str) -> set[str]:
    """The names of the `{placeholders}` in a template (used by the catalog test)."""
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


class LocalizedError(ValueError):
    """An error a user can cause: one sentence, translatable.

    `str(err)` is the English sentence; `err.message(lang)` gives it in another language.
    """

    def __init__(self, key: str, field: str | None = None, **params: object) -> None:
        self.key = key
        self.field = field
        self.params = dict(params)
        if field is not None:
            self.params.setdefault("field", field)
        super().__init__(t(key, "en", **self.params))

    def message(self, lang: str = DEFAULT_LANG) -> str:
        return t(self.key, lang, **self.params)
