"""Drawing: a role has one colour in every environment, by its name."""

import numpy as np
import pytest

import warpsim
from warpsim.registry import registered
from warpsim.render import FrameCanvas, agent_colours, role_colours
from warpsim.spec import Frame


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


def test_a_frame_shows_headings_trails_marks_where_agents_leave_and_the_events_so_far():
    pytest.importorskip("matplotlib")
    from warpsim.analysis.play import Player
    from warpsim.analysis.render import play_episode

    env = warpsim.make("tag_continuous", 1, backend="numpy", seed=3, num_taggers=2, num_runners=6, grid_length=2.0,
                       tagging_distance=0.3, episode_length=40)
    frames = play_episode(Player(env, None, seed=3), max_steps=40)
    assert frames[0].counts == {"tags": 0} and frames[0].headings is not None
    assert [frame.counts["tags"] for frame in frames] == sorted(frame.counts["tags"] for frame in frames)
    tagged_at = next(index for index, frame in enumerate(frames) if frame.counts["tags"] > 0)
    canvas = FrameCanvas(env.spec, env.display_name)
    for frame in frames[:tagged_at + 1]:
        canvas.show(frame)
    assert canvas.title.get_text().endswith(f"t = {frames[tagged_at].time}  tags {frames[tagged_at].counts['tags']}")
    left = frames[tagged_at - 1].active & ~frames[tagged_at].active
    assert np.asarray(canvas.marks.get_offsets()).shape[0] == left.sum() > 0, "a cross where each tagged runner left"
    trails = canvas.trails.get_segments()
    assert len(trails[0]) == min(tagged_at + 1, 6), "the tagger trails its last positions"
    assert all(len(arrow) == 2 for arrow, active in zip(canvas.arrows.get_segments(), frames[tagged_at].active)
               if active)
    canvas.show(frames[0])  # an earlier time: a new episode, its trails and marks start anew
    assert len(canvas.trails.get_segments()[0]) == 1 and np.asarray(canvas.marks.get_offsets()).shape[0] == 0


def test_a_frame_without_headings_or_counts_still_draws():
    """A custom environment's frame() need fill only positions, activity, extent and time."""
    pytest.importorskip("matplotlib")
    env = warpsim.make("tag_gridworld", 1, backend="numpy", num_taggers=2)
    canvas = FrameCanvas(env.spec, env.display_name)
    image = canvas.draw(env.frame(0))
    assert env.frame(0).headings is None and env.frame(0).counts == {}
    assert image.ndim == 3 and canvas.title.get_text().endswith("t = 0") and canvas.arrows.get_segments() == []


@pytest.mark.parametrize("name", registered())
def test_every_built_in_environment_draws(name):
    pytest.importorskip("matplotlib")
    env = warpsim.make(name, 1, backend="numpy")
    canvas = FrameCanvas(env.spec, env.display_name)
    image = canvas.draw(env.frame(0))
    assert image.shape == (320, 320, 3) and canvas.title.get_text().endswith("t = 0")


def test_mpe_worlds_show_their_landmarks_and_goal_and_keep_agents_pushed_out_of_the_box_in_view():
    pytest.importorskip("matplotlib")
    env = warpsim.make("simple_adversary", 1, backend="numpy", N=3)
    frame = env.frame(0)
    state = env.state
    assert frame.landmarks is not None
    assert frame.origin == -1 and frame.extent == 2, "MPE's box [-1, 1]^2 holds every body at the start"
    np.testing.assert_array_equal(frame.landmarks[:, 0], state.landmark_x[0].numpy())
    assert frame.goal == int(state.goal[0])
    canvas = FrameCanvas(env.spec, env.display_name)
    canvas.show(frame)
    np.testing.assert_array_equal(canvas.landmarks.get_offsets(), frame.landmarks)
    np.testing.assert_array_equal(canvas.goal.get_offsets(), frame.landmarks[[frame.goal]])
    assert canvas.axes.get_xlim()[0] < -1 < 1 < canvas.axes.get_xlim()[1]
    assert role_colours(env.spec.role_names) == ["tab:red", "tab:green"], "adversaries red as taggers are"
    pushed = Frame.centred(np.array([[0.2, -2.3], [np.nan, 0.0], [0.0, 0.0], [1.0, 1.0]]), 5, np.array([[0.5, 0.5]]))
    assert (pushed.origin, pushed.extent) == (-2.5, 5.0), "the least half-width in steps of 0.5 that holds them"
    canvas.show(pushed)
    low, high = canvas.axes.get_ylim()
    assert low < -2.3 and high > 2.3 and pushed.goal is None and np.shape(canvas.goal.get_offsets()) == (0, 2)
