"""`AppSettings` holds exactly `build_app`'s keyword arguments: the same names, in the same order, with the
same defaults, and each one documented."""

import dataclasses
import inspect

from space.app import build_app
from space.app_settings import AppSettings


def test_the_settings_are_build_apps_keyword_arguments_with_their_defaults():
    parameters = inspect.signature(build_app).parameters.values()
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in parameters)
    arguments = [(p.name, p.default) for p in parameters]
    settings = [(f.name, f.default) for f in dataclasses.fields(AppSettings)]
    assert settings == arguments


def test_every_setting_is_documented_and_named_in_build_apps_args():
    settings_doc = inspect.getdoc(AppSettings) or ""
    app_args = (inspect.getdoc(build_app) or "").split("Args:")[1].split("Returns:")[0]
    for field in dataclasses.fields(AppSettings):
        assert f"\n    {field.name}: " in settings_doc, field.name
        assert field.name in app_args.replace(",", " ").replace(":", " ").split(), field.name
