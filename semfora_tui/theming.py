"""Theme files: validate YAML into Textual themes plus semfora's own colours.

Built-in themes are the YAML files of the top-level ``themes`` package; user
themes live in ``$XDG_CONFIG_HOME/semfora/themes/``. A bad user file is reported
as a problem string and skipped; this module never touches the screen.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from engine.repo.layout import config_home

if TYPE_CHECKING:
    from textual.theme import Theme

DEFAULT_THEME = "semfora-dark"

# Fallbacks so that any Textual built-in theme (textual-dark, nord, ...) also
# renders the diff and budget colours.
SEMFORA_VARIABLE_DEFAULTS: dict[str, str] = {
    "semfora-added": "#3FB950",
    "semfora-removed": "#F85149",
    "semfora-changed": "#58A6FF",
    "semfora-priority-critical": "#F85149",
    "semfora-priority-high": "#D29922",
    "semfora-priority-medium": "#58A6FF",
    "semfora-priority-low": "#8B949E",
}


def _check_colour(value: str) -> str:
    from textual.color import Color, ColorParseError

    try:
        Color.parse(value)
    except ColorParseError as exc:
        raise ValueError(f"not a colour: {value!r}") from exc
    return value


class SemforaColours(BaseModel):
    """semfora's own theme variables: diff lines and budget priorities."""

    # Built only when a user theme is validated: the built-ins skip validation at start-up.
    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)

    added: str
    removed: str
    changed: str
    priority_critical: str = Field(alias="priority-critical")
    priority_high: str = Field(alias="priority-high")
    priority_medium: str = Field(alias="priority-medium")
    priority_low: str = Field(alias="priority-low")

    @field_validator("*")
    @classmethod
    def _colour(cls, value: str) -> str:
        return _check_colour(value)

    def as_variables(self) -> dict[str, str]:
        return {f"semfora-{key}": value for key, value in self.model_dump(by_alias=True).items()}


class ThemeFile(BaseModel):
    """One theme file: Textual's base colours plus the ``semfora`` block."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    dark: bool = True
    primary: str
    secondary: str | None = None
    accent: str | None = None
    warning: str | None = None
    error: str | None = None
    success: str | None = None
    foreground: str | None = None
    background: str | None = None
    surface: str | None = None
    panel: str | None = None
    semfora: SemforaColours

    @field_validator(
        "primary",
        "secondary",
        "accent",
        "warning",
        "error",
        "success",
        "foreground",
        "background",
        "surface",
        "panel",
    )
    @classmethod
    def _colour(cls, value: str | None) -> str | None:
        return None if value is None else _check_colour(value)

    def to_theme(self) -> Theme:
        from textual.theme import Theme

        base = self.model_dump(exclude={"semfora"})
        return Theme(**base, variables=self.semfora.as_variables())


@dataclass(frozen=True)
class ThemeLoad:
    """The themes that loaded and one line per file that did not."""

    themes: tuple[Theme, ...]
    problems: tuple[str, ...]


def user_themes_dir() -> Path:
    return config_home() / "themes"


def _read_yaml(text: str, origin: str) -> dict[str, object]:
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"{origin}: invalid YAML ({exc.__class__.__name__})") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{origin}: a theme file must be a mapping of keys to colours")
    return data


def parse_theme_text(text: str, origin: str) -> ThemeFile:
    """Validate one YAML document; raises ValueError with a readable message."""
    data = _read_yaml(text, origin)
    try:
        return ThemeFile.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "file"
        raise ValueError(f"{origin}: {where}: {first['msg']}") from exc


def builtin_theme_files() -> list[tuple[str, str]]:
    """``(file name, text)`` of every built-in theme, in name order."""
    entries = sorted(resources.files("themes").iterdir(), key=lambda e: e.name)
    return [(e.name, e.read_text(encoding="utf-8")) for e in entries if e.name.endswith((".yaml", ".yml"))]


def _trusted_theme(data: dict[str, object]) -> Theme:
    """A built-in theme without validation: the shipped files are validated by the test suite,
    and skipping pydantic here keeps it out of the first frame."""
    from textual.theme import Theme

    colours = dict(data)
    extra = colours.pop("semfora")
    assert isinstance(extra, dict)
    return Theme(**colours, variables={f"semfora-{k}": str(v) for k, v in extra.items()})  # type: ignore[arg-type]


def load_themes(user_dir: Path | None = None) -> ThemeLoad:
    """Built-in themes, then the user's; a user file with the same name wins."""
    themes: dict[str, Theme] = {}
    for name, text in builtin_theme_files():
        theme = _trusted_theme(_read_yaml(text, name))
        themes[theme.name] = theme
    problems: list[str] = []
    directory = user_themes_dir() if user_dir is None else user_dir
    if directory.is_dir():
        for path in sorted(directory.iterdir()):
            if path.suffix not in (".yaml", ".yml") or not path.is_file():
                continue
            try:
                theme_file = parse_theme_text(path.read_text(encoding="utf-8"), path.name)
            except (ValueError, OSError, UnicodeDecodeError) as exc:
                problems.append(str(exc))
                continue
            themes[theme_file.name] = theme_file.to_theme()
    return ThemeLoad(tuple(themes.values()), tuple(problems))
