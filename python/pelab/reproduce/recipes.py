"""The eight recipes: title, rule (judge), page (render), and what their null simulation permutes."""
from . import arith_pages, arithmetic, deletang, deletang_page, format, kazemnejad, press, ruoss


def _arith(spec, render):
    return {"judge": lambda t, ctx: arithmetic.judge(t, spec), "render": render, "module": "arithmetic, arith_pages"}


RECIPES = {
    "format": dict(title=format.TITLE, judge=format.judge, render=format.render),
    "ruoss": dict(title=ruoss.TITLE, judge=ruoss.judge, render=ruoss.render),
    "press": dict(title=press.TITLE, judge=press.judge, render=press.render),
    "kazemnejad": dict(title=kazemnejad.TITLE, judge=kazemnejad.judge, render=kazemnejad.render),
    "cho2024": dict(title="Cho et al. 2024, position coupling for addition",
                    **_arith(arith_pages.CHO, arith_pages.render_cho2024)),
    "mcleish2024": dict(title="McLeish et al. 2024, Abacus embeddings for addition",
                        **_arith(arith_pages.MCLEISH, arith_pages.render_mcleish2024)),
    "zhou2024": dict(title="Zhou et al. 2024, FIRE, randomized positions and index hints for addition",
                     **_arith(arith_pages.ZHOU, arith_pages.render_zhou2024)),
    "deletang": dict(title=deletang.TITLE, judge=deletang.judge, render=deletang_page.render,
                     note=deletang_page.NO_MAIN_PLOT),
}


def context(name, config, quick):
    """What a rule needs besides the table: the config, the variant, and for press its n-gram baselines."""
    ctx = {"name": name, "config": config, "quick": quick}
    if name == "press":
        ctx["ngram"] = press.baseline(config)
    return ctx
