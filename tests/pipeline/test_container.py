"""The Apptainer image (containers/): its locks agree with the venv's pins, its name follows
its definition, a missing image stops the run naming the build command, and the tiny grid runs
inside the CPU image with the same outputs as the bare run.

The run inside the image is skipped where Apptainer or the image is missing, unless
RNNBENCH_REQUIRE_CONTAINER=1 (set by .ci/run, which installs Apptainer and builds the image
with containers/build.sh cpu): that turns the skip into a failure.
"""

import hashlib
import json
import os
import re
import shutil
import subprocess

import pandas as pd
import pytest
import yaml

from conftest import REPO, TINY, reference_columns, snakemake
from rnnbench.grid import cells as grid_cells
from rnnbench.pipeline import container
from rnnbench.grid.configcheck import validate_config
from rnnbench.measure.schema import validate_result

CONTAINERS = REPO / "containers"
PYTHON = container.HOST_PYTHON
# None where no image runs this Python (3.12: no Debian ships it)
CPU_IMAGE = (container.image_path(REPO, "cpu") if PYTHON in container.DEBIAN_OF_PYTHON
             else None)
# The CPU images CI builds (.ci/run) for this Python: the venv's TensorFlow and the oldest
# shipped one (3.11: 2.12 and 2.21; 3.13: 2.21)
CPU_IMAGES = {version: container.image_path(REPO, "cpu", version) for version in ("2.12", "2.21")
              if version in container.shipped_tf_versions(CONTAINERS, "cpu")}
OLDEST = min(CPU_IMAGES, key=container.tf_version_key, default=None)  # None: no image (3.12)


def pins(path):
    """{normalised name: version} of the ``name==version`` lines of a requirements file."""
    found = {}
    for line in path.read_text().splitlines():
        match = re.match(r"^([A-Za-z0-9_.\-]+)(\[[^\]]*\])?==([^\s;\\]+)", line)
        if match:
            found[re.sub(r"[-_.]+", "-", match[1]).lower()] = match[3]
    return found


def test_the_image_of_the_venvs_tensorflow_installs_the_venvs_locks():
    venv = pins(REPO / "envs/requirements.txt")
    assert venv["tensorflow-cpu"].startswith(f"{container.DEFAULT_TF_VERSION}.")
    for python in container.DEBIAN_OF_PYTHON:  # (test_install checks those locks' pins)
        for flavor, suffix in (("cpu", ""), ("cuda", "-cuda")):
            assert container.lock_paths(CONTAINERS, flavor, "2.21", python) == (
                REPO / "envs" / "locks" / f"py{python}{suffix}.txt",
                REPO / "envs" / "locks" / f"py{python}-nodeps.txt")


def test_each_version_has_its_locks_and_its_tensorflow():
    assert container.shipped_tf_versions(CONTAINERS, "cpu", "3.11") == ["2.12", "2.16", "2.21"]
    assert container.shipped_tf_versions(CONTAINERS, "cuda", "3.11") == ["2.16", "2.21"]
    # Debian 13's Python: the venv's TensorFlow only (2.12's and 2.16's wheels stop before it)
    assert container.shipped_tf_versions(CONTAINERS, "cpu", "3.13") == ["2.21"]
    assert container.shipped_tf_versions(CONTAINERS, "cuda", "3.13") == ["2.21"]
    assert container.shipped_tf_versions(CONTAINERS, "cpu", "3.12") == []  # no Debian has it
    venv = pins(REPO / "envs/requirements.txt")
    for flavor in ("cpu", "cuda"):
        for version in container.shipped_tf_versions(CONTAINERS, flavor, "3.11"):
            lock, nodeps = map(pins, container.lock_paths(CONTAINERS, flavor, version, "3.11"))
            tensorflow = lock["tensorflow-cpu" if flavor == "cpu" else "tensorflow"]
            assert tensorflow.startswith(f"{version}."), (flavor, version, tensorflow)
            # what a training job imports, at the venv's versions where TensorFlow allows
            assert {lock["jsonschema"], lock["pyyaml"]} == {venv["jsonschema"], venv["pyyaml"]}
            assert set(nodeps) == ({"tf-keras"} if version != "2.12" else set())
    assert pins(CONTAINERS / "requirements-cpu-tf2.16.txt")["keras"].startswith("3.")
    assert pins(CONTAINERS / "requirements-cpu-tf2.12.txt")["keras"].startswith("2.12.")


@pytest.mark.parametrize("lock", sorted(p.name for p in CONTAINERS.glob("requirements-*.txt")))
def test_every_pin_carries_a_hash(lock):
    # pip install --require-hashes refuses a lock where any requirement lacks one
    blocks = re.split(r"\n(?=[A-Za-z0-9])", (CONTAINERS / lock).read_text())
    requirements = [block for block in blocks if re.match(r"[A-Za-z0-9]", block)]
    assert all("--hash=sha256:" in block for block in requirements)
    assert requirements or lock == "requirements-nodeps-tf2.12.txt"  # TF 2.12: no tf-keras
    # (the venv's locks, which the 2.21 images install: test_install)


def test_the_definition_names_no_registry_host():
    text = (CONTAINERS / "rnnbench.def").read_text()
    assert not re.search(r"[a-z]+://|pypi\.org|debian\.org", text)
    # the index only where build.sh was given one (its machine's pip configuration)
    for argument in ("MirrorURL: {{ MIRROR }}", 'index="{{ INDEX_URL }}"',
                     "${index:+--index-url $index}", "OSVersion: {{ SUITE }}",
                     "{{ LOCK }} /opt/build/requirements.txt", "--require-hashes"):
        assert argument in text


def test_the_image_name_follows_its_definition(tmp_path):
    copy = tmp_path / "containers"
    copy.mkdir()
    for path in [CONTAINERS / "rnnbench.def", *CONTAINERS.glob("requirements-*.txt")]:
        shutil.copy(path, copy / path.name)
    shutil.copytree(REPO / "envs" / "locks", tmp_path / "envs" / "locks")
    keys = {(flavor, version, python): container.image_key(copy, flavor, version, python)
            for python in ("3.11", "3.13") for flavor in ("cpu", "cuda")
            for version in container.shipped_tf_versions(copy, flavor, python)}
    assert all(re.fullmatch("[0-9a-f]{16}", key) for key in keys.values())
    assert len(set(keys.values())) == len(keys) == 7
    assert keys["cpu", "2.21", PYTHON] == container.image_key(CONTAINERS, "cpu")  # the defaults
    before = container.images_key(copy, "cpu", "3.11")
    with open(copy / "requirements-cpu-tf2.12.txt", "a") as lock:
        lock.write("\n")
    assert container.image_key(copy, "cpu", "2.12", "3.11") != keys["cpu", "2.12", "3.11"]
    assert container.image_key(copy, "cpu", "2.21", "3.11") == keys["cpu", "2.21", "3.11"]
    assert container.image_key(copy, "cuda", "2.16", "3.11") == keys["cuda", "2.16", "3.11"]
    assert container.images_key(copy, "cpu", "3.11") != before  # a new folder for image runs
    with open(tmp_path / "envs" / "locks" / "py3.13.txt", "a") as lock:  # the venv's lock
        lock.write("\n")
    assert container.image_key(copy, "cpu", "2.21", "3.13") != keys["cpu", "2.21", "3.13"]
    assert container.image_key(copy, "cuda", "2.21", "3.13") == keys["cuda", "2.21", "3.13"]
    with pytest.raises(ValueError, match="'gpu'"):
        container.image_key(copy, "gpu")
    with pytest.raises(ValueError, match=r"tf_version '2.13' has no cpu image; the cpu images "
                                         r"for Python 3.11 are for TensorFlow 2.12, 2.16, 2.21"):
        container.image_key(copy, "cpu", "2.13", "3.11")
    with pytest.raises(ValueError, match=r"only from 2.14 on"):
        container.image_key(copy, "cuda", "2.12", "3.11")
    with pytest.raises(ValueError, match=r"tf_version '2.12' has no cpu image for Python 3.13 "
                                         r"\(its images are for Python 3.11, Debian bookworm"):
        container.image_key(copy, "cpu", "2.12", "3.13")


def test_snakemake_on_a_python_no_debian_image_has_is_refused():
    """Ubuntu 24.04's Python 3.12: no image can serve its Snakemake's jobs."""
    with pytest.raises(ValueError, match=r"no image runs Python 3.12, this Snakemake's: .* "
                                         r"Python 3.11 \(Debian bookworm\) and 3.13 \(Debian "
                                         r"trixie\): .*PYTHON=python3.11 ./install.sh"):
        container.image_path(REPO, "cpu", "2.21", "3.12")


def test_build_sh_gets_the_release_and_locks_of_the_images_python():
    for python, suite in (("3.11", "bookworm"), ("3.13", "trixie")):
        proc = subprocess.run(["python3", "-m", "rnnbench.pipeline.container", REPO, "cuda",
                               "2.21", python], capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONPATH": str(REPO / "workflow/scripts")})
        assert proc.stdout.split() == [
            str(container.image_path(REPO, "cuda", "2.21", python)), suite,
            f"../envs/locks/py{python}-cuda.txt", f"../envs/locks/py{python}-nodeps.txt"]


def test_the_image_path_is_absolute_wherever_snakemake_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = container.image_path(REPO, "cuda")
    assert path.is_absolute() and path.parent == REPO / "containers" / "images"
    assert path.name == (f"rnnbench-cuda-tf2.21-py{PYTHON}-"
                         f"{container.image_key(CONTAINERS, 'cuda')}.sif")
    assert container.image_path(REPO, "cpu", "2.12", "3.11").name.startswith(
        "rnnbench-cpu-tf2.12-py3.11-")


def test_a_bare_run_lists_the_installed_version_only():
    container.check_bare_tf_versions(["2.21"], "2.21.0", CONTAINERS)
    with pytest.raises(ValueError) as error:
        container.check_bare_tf_versions(["2.12", "2.16", "2.21", "2.13"], "2.21.0", CONTAINERS,
                                         python="3.11")
    # every version that cannot run, at once: how to run those with an image, which have none
    assert str(error.value) == (
        "tf_version ['2.13']: no cpu image (the cpu images are of TensorFlow 2.12, 2.16, 2.21); "
        "tf_version ['2.12', '2.16']: without containers, the installed TensorFlow 2.21.0 runs "
        "every job; run them with --use-singularity, after containers/build.sh cpu 2.12; "
        'containers/build.sh cpu 2.16; or set tf_version: ["2.21"]')
    with pytest.raises(ValueError, match=r"tf_version \['2.12'\]: no cuda image"):
        container.check_bare_tf_versions(["2.12"], "2.21.0", CONTAINERS, "cuda", python="3.11")
    with pytest.raises(ValueError, match=r"tf_version \['2.12'\]: no cpu image for Python 3.13 "
                                         r"\(the cpu images are of TensorFlow 2.21; those of "
                                         r"2.12 run Python 3.11"):
        container.check_bare_tf_versions(["2.12"], "2.21.0", CONTAINERS, python="3.13")
    with pytest.raises(ValueError, match="no TensorFlow is installed"):
        container.check_bare_tf_versions(["2.21"], None, CONTAINERS)
    assert container.installed_tf_version().startswith("2.21.")  # the venv's, not imported


def test_the_deployment_names_its_images_or_refuses_what_cannot_run(tmp_path):
    """Bare and conda runs use no image and refuse a version they cannot run; an Apptainer
    run whose image is missing is refused with the build command."""
    assert container.deployment_images(set(), REPO, "cpu", "cpu", ["2.21"], {}) == (None, {},
                                                                                   {})
    # (a Python without 2.12's images, Debian 13's 3.13, is told so instead)
    with pytest.raises(ValueError, match=r"tf_version \['2.12'\]: (without containers|no cpu "
                                         r"image for Python)"):
        container.deployment_images(set(), REPO, "cpu", "cpu", ["2.12"], {})
    with pytest.raises(ValueError, match=r"tf_version \['2.12'\]: (with --use-conda, "
                                         r"envs/environment.yaml's|no cpu image for Python)"):
        container.deployment_images({"conda"}, REPO, "cpu", "cpu", ["2.12"], {})
    repo = tmp_path / "clone"  # its definitions and locks, but no image built
    for folder in ("containers", "envs"):
        shutil.copytree(REPO / folder, repo / folder, ignore=shutil.ignore_patterns("*.sif"))
    with pytest.raises(ValueError, match=r"no cpu image of TensorFlow 2.21 .*build.sh cpu 2.21"):
        container.deployment_images({"apptainer", "conda"}, repo, "cpu", "cpu", ["2.21"], os.environ)


def test_check_deployment_names_every_missing_image(tmp_path):
    images = {"2.12": tmp_path / "a.sif", "2.21": tmp_path / "b.sif"}
    with pytest.raises(ValueError) as error:
        container.check_deployment(images, "cpu", "cpu", REPO, os.environ)
    assert "build.sh cpu 2.12" in str(error.value) and "build.sh cpu 2.21" in str(error.value)


def test_the_image_sha256_is_that_of_the_file_now(tmp_path):
    image = tmp_path / "cache" / "x.sif"
    image.parent.mkdir()
    image.write_bytes(b"sif")
    link = tmp_path / "link.sif"
    link.symlink_to(image)
    record = tmp_path / "cache" / "x.sif.sha256"
    record.write_text("0" * 64 + "\n")  # a stale record, without the file's size and mtime
    assert container.image_sha256(link) == hashlib.sha256(b"sif").hexdigest()
    digest, size, _ = record.read_text().split()  # rewritten, with what it was computed from
    assert (digest, int(size)) == (hashlib.sha256(b"sif").hexdigest(), 3)
    image.write_bytes(b"another")  # the image replaced under the same name
    assert container.image_sha256(link) == hashlib.sha256(b"another").hexdigest()
    with pytest.raises(OSError):
        container.image_sha256(tmp_path / "missing.sif")


def copy_of_the_workflow(tmp_path, def_suffix=""):
    """A copy of the repository's workflow (its image definition plus ``def_suffix``)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    for name in ("Snakefile", "config.yaml"):
        shutil.copy(REPO / name, repo / name)
    for folder in ("workflow", "profiles", "envs"):
        shutil.copytree(REPO / folder, repo / folder, ignore=shutil.ignore_patterns("__pycache__"))
    (repo / "containers").mkdir()
    for path in [*CONTAINERS.glob("requirements-*.txt"), *(
            CONTAINERS / name for name in ("rnnbench.def", "build.sh", "debian-mirror"))]:
        shutil.copy(path, repo / "containers" / path.name)
    with open(repo / "containers" / "rnnbench.def", "a") as definition:
        definition.write(def_suffix)
    work = tmp_path / "work"
    work.mkdir()
    (work / "config.yaml").write_text(yaml.safe_dump(TINY))
    return repo, work


@pytest.mark.parametrize("flavor, message", [
    ("gpu", "the flavor is cuda (the image for device: gpu), not 'gpu'"),
    ("", "the flavor must be cpu or cuda, not ''"),
    ("2.12", "the flavor comes first: containers/build.sh cpu 2.12"),
])
def test_build_sh_names_a_bad_flavor(flavor, message):
    proc = subprocess.run([str(CONTAINERS / "build.sh"), flavor], capture_output=True, text=True)
    assert proc.returncode == 2 and message in proc.stderr


def test_build_sh_keeps_an_image_file_copied_in_place(tmp_path):
    repo, _ = copy_of_the_workflow(tmp_path)
    image = container.image_path(repo, "cpu")
    image.parent.mkdir()
    image.write_bytes(b"an image copied here by hand")
    proc = subprocess.run([str(repo / "containers" / "build.sh"), "cpu", "2.21", PYTHON],
                          capture_output=True,
                          text=True, env={**os.environ, "RNNBENCH_CACHE": str(tmp_path / "c")})
    assert proc.returncode == 0 and proc.stdout.strip() == str(image)
    assert not image.is_symlink() and image.read_bytes() == b"an image copied here by hand"


@pytest.mark.slow
def test_a_missing_image_stops_the_run_and_names_the_build_command(tmp_path):
    # A copy of the workflow whose definition differs by a comment: its image is not built.
    repo, work = copy_of_the_workflow(tmp_path, "# changed\n")
    proc = snakemake(work, "-s", str(repo / "Snakefile"), "--use-singularity", "--cores", "1",
                     check=False)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert f"{repo / 'containers' / 'build.sh'} cpu 2.21" in output
    assert str(container.image_path(repo, "cpu")) in output
    assert not (work / "results").exists()




def check(image, environ):
    container.check_deployment({"2.21": image}, "cpu", "cpu", REPO, environ)


def test_check_deployment_names_a_missing_image_and_a_dangling_link(tmp_path):
    with pytest.raises(ValueError, match=f"build it with: {REPO}/containers/build.sh cpu 2.21"):
        check(tmp_path / "x.sif", os.environ)
    (tmp_path / "x.sif").symlink_to(tmp_path / "deleted.sif")
    with pytest.raises(ValueError, match="a link to .*deleted.sif, which is gone"):
        check(tmp_path / "x.sif", os.environ)


def test_check_deployment_says_how_to_install_apptainer(tmp_path):
    (tmp_path / "x.sif").write_bytes(b"sif")
    with pytest.raises(ValueError, match="needs apptainer on PATH") as error:
        check(tmp_path / "x.sif", {"PATH": str(tmp_path)})
    assert str(REPO / ".ci" / "install-apptainer.sh") in str(error.value)


@pytest.mark.parametrize("variable", ["PYTHONPATH", "PYTHONHOME"])
def test_check_deployment_refuses_host_python_variables(tmp_path, variable):
    (tmp_path / "x.sif").write_bytes(b"sif")
    (tmp_path / "apptainer").write_text("#!/bin/sh\n")
    (tmp_path / "apptainer").chmod(0o755)
    with pytest.raises(ValueError, match=f"{variable}=/elsewhere would reach the image's Python"):
        check(tmp_path / "x.sif", {"PATH": str(tmp_path), variable: "/elsewhere"})


@pytest.mark.skipif(os.environ.get("RNNBENCH_REQUIRE_CONTAINER") != "1"
                    and not shutil.which("apptainer"), reason="no Apptainer")
def test_check_deployment_starts_the_image(tmp_path):
    (tmp_path / "x.sif").write_bytes(b"not a SIF file")  # e.g. a truncated copy
    with pytest.raises(ValueError, match=f"image {tmp_path / 'x.sif'} does not start"):
        check(tmp_path / "x.sif", os.environ)
    if CPU_IMAGE is not None and CPU_IMAGE.exists():
        environ = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        check(CPU_IMAGE, environ)
        # an image under another version's name (a wrong link or copy) is refused by its labels
        with pytest.raises(ValueError, match=f"{CPU_IMAGE} holds the cpu image of TensorFlow "
                                             f"2.21 with Python {PYTHON} .* not the cpu image "
                                             f"of 2.12 with Python {PYTHON}"):
            container.check_deployment({"2.12": CPU_IMAGE}, "cpu", "cpu", REPO, environ)
        # ... and one of another Python (a Snakemake of 3.13 cannot serve a 3.11 image's jobs)
        with pytest.raises(ValueError, match=f"with Python {PYTHON} .* not the cpu image of "
                                             "2.21 with Python 3.99"):
            container.check_deployment({"2.21": CPU_IMAGE}, "cpu", "cpu", REPO, environ, "3.99")


def should_run():
    """True where the image tests run: Apptainer and the images are there, or CI requires
    them (where their absence fails the test)."""
    return os.environ.get("RNNBENCH_REQUIRE_CONTAINER") == "1" or (
        bool(shutil.which("apptainer")) and all(i.exists() for i in CPU_IMAGES.values()))


needs_image = pytest.mark.skipif(
    not should_run(), reason="no Apptainer or no CPU images (containers/build.sh cpu [2.12])")


def tiny_grid_in_images(workdir):
    """A tiny keras cell at the oldest TensorFlow with an image for this Python (3.11: 2.12;
    3.13: 2.21) with --use-singularity in ``workdir``: 2 training jobs and rule peak in that
    version's image, rules make_data and aggregate in the 2.21 image, as every rule that is not
    a training or peak job (test_slurm runs a compat_v1 cell at 2.21 in its image). Run in the
    background from the session's start (conftest)."""
    if not (shutil.which("apptainer") and all(i.exists() for i in CPU_IMAGES.values())):
        return None  # the test fails, naming what is missing
    config = {**TINY, "repeats": 1, "max_len": [4], "api": ["keras"], "tf_version": [OLDEST]}
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    proc = snakemake(workdir, "--cores", "2", "--use-singularity", "--",
                     "results/measurements.csv", "results/summary.csv")
    return {"config": config, "log": proc.stdout + proc.stderr}


# test name -> scenario: conftest starts those of the selected tests when the session starts
SCENARIOS = {"test_the_tiny_grid_runs_inside_the_cpu_images": tiny_grid_in_images}


@needs_image
def test_the_tiny_grid_runs_inside_the_cpu_images(scenarios):
    assert shutil.which("apptainer"), "RNNBENCH_REQUIRE_CONTAINER=1 but apptainer is not on PATH"
    for image in CPU_IMAGES.values():
        assert image.exists(), f"RNNBENCH_REQUIRE_CONTAINER=1 but {image} is missing"
    tmp_path, outcome = scenarios["test_the_tiny_grid_runs_inside_the_cpu_images"]
    config, log = outcome["config"], outcome["log"]
    for rule, version in (("make_data", "2.21"), ("peak", OLDEST), ("train_static", OLDEST),
                          ("aggregate", "2.21")):
        job = log[log.index(f"rule {rule}:"):]
        assert f"Activating singularity image {CPU_IMAGES[version]}" in job[:job.index("Finished")]

    validate_config(config)
    # runs in images have a folder of their own, named by the flavor's set of images
    protocol = grid_cells.protocol_id(
        config, image=f"apptainer-cpu-{container.images_key(CONTAINERS, 'cpu')}")
    runs = list((tmp_path / "results/runs" / protocol).rglob("repeat*.json"))
    assert len(runs) == 2
    image = CPU_IMAGES[OLDEST]  # the image of the cells' tf_version (common.smk image_of)
    for path in runs:
        result = json.loads(path.read_text())
        validate_result(result)  # the same schema as the bare run's results
        meta = result["metadata"]
        assert result["cell"]["tf_version"] == OLDEST
        # (the venv's TensorFlow is the cell id's default: no suffix)
        assert (f"_tf{OLDEST}" in result["cell_id"]) == (OLDEST != container.DEFAULT_TF_VERSION)
        assert meta["apptainer_container"] == str(image)
        assert meta["tf_version"].startswith(f"{OLDEST}.")
        # the image's Keras: 2.12's own (tf.keras) or the Keras 3 of envs/requirements.txt
        assert meta["keras_version"].startswith("2.12." if OLDEST == "2.12" else "3.")
        assert meta["image_sha256"] == hashlib.sha256(image.read_bytes()).hexdigest()
        assert meta["python_prefix"] == "/opt/rnnbench"  # the image's Python ...
        assert meta["tensorflow_path"].startswith("/opt/rnnbench/")  # ... and TensorFlow
        assert meta["python_version"].startswith(f"{PYTHON}.")
        assert meta["is_cuda_build"] is False and meta["gpus_visible"] == []
        assert result["cell"]["api"] == "keras" and result["loss"]["first"] > 0
    peak = json.loads((tmp_path / "results/runs" / protocol
                       / f"peak_intra1_tf{OLDEST}.json").read_text())
    assert peak["tf_version"] == OLDEST and peak["metadata"]["tf_version"].startswith(f"{OLDEST}.")

    assert not (tmp_path / ".keras").exists()  # Keras wrote no config into the working dir

    # the same tables as a bare run's (test_workflow checks those against the same reference)
    tiny = {**TINY, "tf_version": [OLDEST]}
    validate_config(tiny)
    for table, columns in reference_columns(tmp_path).items():
        ours = pd.read_csv(tmp_path / "results" / table)
        assert list(ours.columns) == columns
        assert set(ours["cell_id"]) < set(grid_cells.cells(tiny))


def test_the_repository_names_no_package_index():
    """build.sh and lock.sh pass an index only where this machine's pip has one configured;
    otherwise pip and uv use their own default, so no file names an index's host."""
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True,
                           check=True).stdout.split()
    named = [name for name in files
             if any(host in (REPO / name).read_text(errors="ignore")
                    for host in ("pypi" + ".org", "pythonhosted" + ".org"))]  # not named here either
    assert named == [], named


def test_scripts_bind_adds_the_scripts_folder_read_only_once():
    scripts = "/srv/rnn bench/workflow/scripts"
    entry = f"{scripts}:{scripts}:ro"
    assert container.scripts_bind(scripts, {}) == entry
    assert container.scripts_bind(scripts, {"APPTAINER_BIND": "/data,/scratch:/s"}) == (
        f"/data,/scratch:/s,{entry}")
    # a SLURM job step reads the Snakefile again, with the value set by the submitting run
    again = container.scripts_bind(scripts, {"APPTAINER_BIND": f"/data,{entry}"})
    assert again == f"/data,{entry}"


@pytest.mark.parametrize("folder", ["/a,b/workflow/scripts", "/a:b/workflow/scripts"])
def test_scripts_bind_refuses_apptainers_separators(folder):
    with pytest.raises(ValueError, match=re.escape(repr(folder))):
        container.scripts_bind(folder, {})
