# `snakemake --use-singularity --cores 1 check_gpu`: print what TensorFlow sees inside the
# image (build, CUDA and cuDNN versions, GPUs, driver). A GPU user's first check. No output
# file, so it runs whenever asked for, and never as part of the grid.
rule check_gpu:
    log:
        layout.rule_log("check_gpu"),
    localrule: True
    conda:
        "../../envs/environment.yaml"
    params:
        workflow_meta=workflow_meta(images.DEFAULT_TF_VERSION),
    script:
        "../scripts/check_gpu.py"
