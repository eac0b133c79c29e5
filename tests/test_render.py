"""Drawing: a role has one colour in every environment, by its name."""

import pytest

import warpsim
from warpsim.render import FrameCanvas, agent_colours, role_colours


def test_taggers_and_runners_look_the_same_in_every_environment():
    continuous = warpsim.make("tag_continuous", 1, backend="numpy", num_taggers=1, num_runners=2)
    grid = warpsim.make("tag_gridworld", 1, backend="numpy", num_taggers=2)
    assert continuous.spec.role_names != grid.spec.role_names  # declared in different orders
    for env in (continuous, grid):
        colours = dict(zip(env.spec.role_names, role_colours(env.spec.role_names)))
        assert colours == {"tagger": "tab:red", "runner": "tab:blue"}
    assert agent_colours(continuous.spec) == ["tab:red", "tab:blue", "tab:blue"]  # agent 0 is the tagger
    assert agent_colours(grid.spec) == ["tab:red", "tab:red", "tab:blue"]  # the last agent is the runner


def test_other_roles_take_distinct_colours_in_declaration_order():
    colours = role_colours(("walker", "runner", "builder"))
    assert colours[1] == "tab:blue" and len(set(colours)) == 3 and "tab:red" not in colours


def test_the_legend_hides_no_part_of_the_arena():
    pytest.importorskip("matplotlib")
    env = warpsim.make("tag_continuous", 1, backend="numpy", num_taggers=1, num_runners=2)
    canvas = FrameCanvas(env.spec, env.display_name)
    image = canvas.draw(env.frame(0))
    renderer = canvas.canvas.get_renderer()
    legend, arena = canvas.legend.get_window_extent(renderer), canvas.axes.get_window_extent(renderer)
    assert not legend.overlaps(arena)
    assert 0 <= legend.y0 and legend.x0 >= 0 and legend.x1 <= image.shape[1], "the legend is inside the image"
