//! `zkmha._native`: the Python package's native module, a thin layer over `zkmha_api` (the
//! `zkmha` package's `__init__.py` wraps it). Files are read and written by the library (a
//! temporary name, then renamed); numpy arrays come in and go out as float64; every library
//! error becomes one of the package's exceptions, by its kind.

use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray2};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::path::{Path, PathBuf};
use zkmha_api::attention_layer::{self, AttentionInputs, AttentionShape, Expected, Hiding};
use zkmha_api::chain_tasks;
use zkmha_api::layer_files::LayerProof;
use zkmha_api::model_chain;
use zkmha_api::model_files;
use zkmha_api::{ErrorKind, Model, ModelInput, ModelOptions, SoftmaxMode, WeightCommitments};

create_exception!(_native, ZkmhaError, PyException, "A zkmha failure (the base of the others).");
create_exception!(_native, InvalidProof, ZkmhaError, "The proof does not verify against the verifier key.");
create_exception!(
    _native,
    BadInput,
    ZkmhaError,
    "An unreadable, foreign, corrupt or over-the-limits file, or a value the proof cannot take."
);
create_exception!(_native, UnsupportedModel, ZkmhaError, "The model has a feature the proof does not cover.");
create_exception!(_native, UsageError, ZkmhaError, "Arguments that do not go together.");
create_exception!(_native, OutOfResources, ZkmhaError, "The machine ran out of disk, quota or memory.");
create_exception!(
    _native,
    RefusedProof,
    ZkmhaError,
    "A proof of another statement than the one expected (token ids, positions, layers, softmax, mask); not verified."
);
create_exception!(
    _native,
    FidelityWarning,
    pyo3::exceptions::PyUserWarning,
    "A proven output over 1 % from float64: the proof is valid, for a quantized model that differs from the model more than zkmha allows."
);

/// Warns (`FidelityWarning`) for each proven output over 1 % from float64.
fn warn_fidelity(py: Python<'_>, warnings: &[zkmha_api::fidelity::FidelityWarning]) -> PyResult<()> {
    for warning in warnings {
        let message = std::ffi::CString::new(warning.to_string()).unwrap_or_default();
        PyErr::warn(py, &py.get_type::<FidelityWarning>(), &message, 1)?;
    }
    Ok(())
}

/// The error as one sentence with its causes (as the command line prints it), raised as the
/// package's exception of its kind.
fn to_python(error: &zkmha_api::Error) -> PyErr {
    let mut sentence = error.to_string();
    let mut cause = std::error::Error::source(error);
    while let Some(inner) = cause {
        sentence.push_str(": ");
        sentence.push_str(&inner.to_string());
        cause = inner.source();
    }
    match error.kind() {
        ErrorKind::InvalidProof => InvalidProof::new_err(sentence),
        ErrorKind::Refused => RefusedProof::new_err(sentence),
        ErrorKind::UnsupportedModel => UnsupportedModel::new_err(sentence),
        ErrorKind::Usage => UsageError::new_err(sentence),
        ErrorKind::OutOfResources => OutOfResources::new_err(sentence),
        ErrorKind::BadInput => BadInput::new_err(sentence),
    }
}

/// `Result<T, zkmha_api::Error>` as a Python result.
trait Raise<T> {
    fn raise(self) -> PyResult<T>;
}

impl<T> Raise<T> for zkmha_api::Result<T> {
    fn raise(self) -> PyResult<T> {
        self.map_err(|error| to_python(&error))
    }
}

fn model_options(
    layer: usize,
    family: Option<&str>,
    heads: Option<usize>,
    mask: Option<&str>,
) -> PyResult<ModelOptions> {
    let family = family.map(zkmha_api::parse_family).transpose().map_err(UsageError::new_err)?;
    let mask = mask.map(zkmha_api::parse_mask).transpose().map_err(UsageError::new_err)?;
    Ok(ModelOptions { layer, family, heads, mask, max_memory: None })
}

/// A `rows × columns` float64 array of row-major `values`.
fn to_array<'py>(
    py: Python<'py>,
    rows: usize,
    columns: usize,
    values: Vec<f64>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let array = Array2::from_shape_vec((rows, columns), values).map_err(|e| {
        BadInput::new_err(format!("the output does not have {rows} × {columns} entries: {e}"))
    })?;
    Ok(array.into_pyarray(py))
}

/// The layers `start..end` of a chain, checked.
fn chain_layers(layers: (usize, usize)) -> PyResult<std::ops::Range<usize>> {
    let (start, end) = layers;
    if start >= end {
        return Err(UsageError::new_err(format!(
            "layers ({start}, {end}) holds no layer: pass (first, last + 1)"
        )));
    }
    Ok(start..end)
}

/// Commits to a model layer: writes the verifier key to `key_path` and, for hiding
/// commitments (unless `transparent`), the model secret (readable by its owner only) to
/// `secret_path` or beside the key; returns `inspect`'s JSON of the key with the secret's path.
/// With `layers = (a, b)`: the chain key of layers `a..b` (one residual stream scale).
#[pyfunction]
#[pyo3(signature = (model_path, key_path, *, layer=0, layers=None, family=None, heads=None, mask=None, transparent=false, secret_path=None, description=None))]
#[allow(clippy::too_many_arguments)]
fn commit_model(
    py: Python<'_>,
    model_path: PathBuf,
    key_path: PathBuf,
    layer: usize,
    layers: Option<(usize, usize)>,
    family: Option<&str>,
    heads: Option<usize>,
    mask: Option<&str>,
    transparent: bool,
    secret_path: Option<PathBuf>,
    description: Option<String>,
) -> PyResult<String> {
    if let Some(description) = &description {
        zkmha_api::model_layer::check_description(description).raise()?;
    }
    if transparent && secret_path.is_some() {
        return Err(UsageError::new_err(
            "transparent=True writes no secret (binding commitments have none): drop secret_path",
        ));
    }
    let options = model_options(layer, family, heads, mask)?;
    let commitments = if transparent { WeightCommitments::Binding } else { WeightCommitments::Hiding };
    let secret_file =
        (!transparent).then(|| secret_path.clone().unwrap_or_else(|| model_files::secret_path(&key_path)));
    let mut writes = vec![("key_path", key_path.as_path())];
    writes.extend(secret_file.as_deref().map(|s| ("secret_path", s)));
    zkmha_api::files::check_distinct_files(&[("model_path", &model_path)], &writes).raise()?;
    if let Some(layers) = layers {
        let layers = chain_layers(layers)?;
        return py
            .detach(|| -> zkmha_api::Result<String> {
                let models = model_chain::open_layers(&model_path, &options, layers)?;
                let committed = model_chain::commit_chain(&models, commitments, &mut |_, _| {})?;
                let committed = committed.describe(description.as_deref())?;
                let secret_file = committed.secret.as_ref().and(secret_file);
                model_chain::write_chain_key_and_secret(
                    &key_path,
                    &committed.key,
                    secret_file.as_deref().zip(committed.secret.as_ref()),
                )?;
                let secret_file = secret_file.map(|path| path.display().to_string());
                let mut json = zkmha_api::inspect::Inspection::ChainKey(Box::new(committed.key)).to_json();
                json["secret"] = serde_json::json!(secret_file);
                json["chain_key"] = serde_json::json!(key_path.display().to_string());
                Ok(json.to_string())
            })
            .raise();
    }
    py.detach(|| -> zkmha_api::Result<String> {
        let model = Model::open(&model_path, &options)?;
        let committed = zkmha_api::commit_model(&model, commitments)?;
        let committed = committed.describe(description.as_deref())?;
        let secret_file = committed.secret.as_ref().and(secret_file);
        model_files::write_key_and_secret(
            &key_path,
            &committed.key,
            secret_file.as_deref().zip(committed.secret.as_ref()),
        )?;
        let secret_file = secret_file.map(|path| path.display().to_string());
        let mut json = zkmha_api::inspect::Inspection::VerifierKey(Box::new(committed.key)).to_json();
        json["secret"] = serde_json::json!(secret_file);
        json["verifier_key"] = serde_json::json!(key_path.display().to_string());
        Ok(json.to_string())
    })
    .raise()
}

/// Proves a model layer on `tokens`, `text` or the hidden state `input` (a float64
/// `tokens × d_model` array) against the verifier key at `key_path` (with its model secret),
/// writes the proof to `proof_path` and returns the proven output (float64, tokens ×
/// d_model): the layer's output H' (for BERT the post-norm layer's `output.LayerNorm`). With
/// `layers = (a, b)` and a chain key: one proof of layers `a..b`, returning the last layer's
/// output.
#[pyfunction]
#[pyo3(signature = (model_path, key_path, proof_path, *, tokens=None, text=None, input=None, layer=0, layers=None, family=None, heads=None, mask=None, secret_path=None, all_positions=false, transparent=false))]
#[allow(clippy::too_many_arguments)]
fn prove<'py>(
    py: Python<'py>,
    model_path: PathBuf,
    key_path: PathBuf,
    proof_path: PathBuf,
    tokens: Option<Vec<usize>>,
    text: Option<String>,
    input: Option<PyReadonlyArray2<'py, f64>>,
    layer: usize,
    layers: Option<(usize, usize)>,
    family: Option<&str>,
    heads: Option<usize>,
    mask: Option<&str>,
    secret_path: Option<PathBuf>,
    all_positions: bool,
    transparent: bool,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let options = model_options(layer, family, heads, mask)?;
    let input = match (tokens, text, input) {
        (Some(ids), None, None) => ModelInput::Tokens(ids),
        (None, Some(text), None) => ModelInput::Text(text),
        (None, None, Some(array)) => {
            let array = array.as_array();
            ModelInput::HiddenState { values: array.iter().copied().collect(), columns: array.ncols() }
        }
        _ => return Err(UsageError::new_err("pass the layer input as exactly one of tokens, text or input")),
    };
    if all_positions && layers.is_none() {
        return Err(UsageError::new_err(
            "all_positions proves a chain's logits: pass layers=(0, L) with the model's last layer",
        ));
    }
    let secret_file = secret_path.clone().unwrap_or_else(|| model_files::secret_path(&key_path));
    zkmha_api::files::check_distinct_files(
        &[("model_path", &model_path), ("key_path", &key_path), ("the key's secret", &secret_file)],
        &[("proof_path", &proof_path)],
    )
    .raise()?;
    if let Some(layers) = layers {
        let layers = chain_layers(layers)?;
        let proved = py
            .detach(|| -> zkmha_api::Result<_> {
                let key = model_chain::read_chain_key(&key_path)?;
                if let Some(first) = key.layers.first() {
                    model_files::check_key_mode(&key_path, first.weight_commitments, transparent)?;
                }
                let secret = match key.layers.first().map(|k| k.weight_commitments) {
                    Some(WeightCommitments::Hiding) => {
                        Some(model_chain::read_chain_secret_for(&key_path, secret_path.as_deref())?)
                    }
                    _ => None,
                };
                let models = model_chain::open_layers(&model_path, &options, layers)?;
                let positions = if all_positions {
                    model_chain::LogitPositions::All
                } else {
                    model_chain::LogitPositions::Last
                };
                let proved = model_chain::prove_chain_with(
                    &key,
                    secret.as_ref(),
                    &models,
                    &input,
                    positions,
                    &mut |_, _| {},
                )?;
                proved.proof.write(&proof_path)?;
                Ok(proved)
            })
            .raise()?;
        let logits_error = proved.logits.as_ref().and_then(|l| l.against_reference()).map(|(_, e)| e);
        let first = proved.proof.first_layer();
        let layers = proved
            .layer_errors
            .iter()
            .enumerate()
            .map(|(i, &e)| (format!("layer {}'s output", first + i as u64), e));
        warn_fidelity(
            py,
            &zkmha_api::fidelity::fidelity_warnings(
                layers.chain(logits_error.map(|e| ("the logits".to_string(), e))),
            ),
        )?;
        // A chain with a head: its proven output is the logits.
        return match proved.logits {
            Some(l) => to_array(py, l.positions.len(), l.vocabulary, l.values),
            None => to_array(py, proved.tokens, proved.model_width, proved.output),
        };
    }
    let proved = py
        .detach(|| -> zkmha_api::Result<_> {
            let key = model_files::read_key(&key_path)?;
            model_files::check_key_mode(&key_path, key.weight_commitments, transparent)?;
            let secret = match key.weight_commitments {
                WeightCommitments::Hiding => {
                    Some(model_files::read_secret_for(&key, &key_path, secret_path.as_deref())?)
                }
                WeightCommitments::Binding => None,
            };
            let model = Model::open(&model_path, &options)?;
            let proved = zkmha_api::prove(&key, secret.as_ref(), &model, &input)?;
            proved.proof.write(&proof_path)?;
            Ok(proved)
        })
        .raise()?;
    warn_fidelity(
        py,
        &zkmha_api::fidelity::fidelity_warnings([(
            format!("layer {layer}'s output"),
            proved.accuracy.output.relative_l2_error,
        )]),
    )?;
    to_array(py, proved.tokens, proved.model_width, proved.output)
}

/// What a verifier accepted as a dict of plain values and numpy arrays (the `zkmha` package
/// wraps it in `zkmha.Verified`).
fn verified_dict<'py>(py: Python<'py>, verified: zkmha_api::Verified) -> PyResult<Bound<'py, PyDict>> {
    use zkmha_api::{ProvenInput, ProvenOutput};
    let dict = PyDict::new(py);
    dict.set_item("kind", verified.kind.name())?;
    dict.set_item("mode", verified.mode.name())?;
    dict.set_item("key_fingerprint", verified.key.as_ref().map(|k| k.fingerprint.clone()))?;
    dict.set_item("description", verified.key.as_ref().map(|k| k.description.clone()))?;
    dict.set_item("layers", verified.layers.as_ref().map(|l| (l.start, l.end)))?;
    dict.set_item("tokens", verified.tokens)?;
    let (input, commitment) = match &verified.input {
        ProvenInput::TokenIds(_) => ("token ids", None),
        ProvenInput::CommittedHiddenState { commitment } => {
            ("committed hidden state", Some(commitment.clone()))
        }
        ProvenInput::CommittedAttentionInputs { queries, keys, values } => {
            ("committed Q, K, V", Some(format!("Q {queries}, K {keys}, V {values}")))
        }
    };
    dict.set_item("input", input)?;
    dict.set_item("input_commitment", commitment)?;
    dict.set_item("token_ids", verified.token_ids().map(|ids| PyArray1::from_slice(py, ids)))?;
    dict.set_item("positions", verified.positions().map(|p| PyArray1::from_slice(py, p)))?;
    dict.set_item("predicted", verified.logits().map(|l| l.predicted.clone()))?;
    dict.set_item("output_name", verified.output.name())?;
    dict.set_item("output_digest", verified.output_digest.clone())?;
    dict.set_item("verify_seconds", verified.verify_time.as_secs_f64())?;
    let (rows, columns) = verified.output.shape();
    match verified.output {
        ProvenOutput::Logits(l) => dict.set_item("output", to_array(py, rows, columns, l.values)?)?,
        ProvenOutput::HiddenState { values, .. } => {
            dict.set_item("output", to_array(py, rows, columns, values)?)?
        }
        ProvenOutput::Attention { values, .. } => {
            let values = values.ok_or_else(no_integer_output)?;
            let array = Array2::from_shape_vec((rows, columns), values)
                .map_err(|e| BadInput::new_err(e.to_string()))?
                .into_pyarray(py);
            dict.set_item("output", array)?
        }
    }
    Ok(dict)
}

/// Verifies the model-layer proof at `proof_path` with the verifier key at `key_path` alone
/// (a chain's proof with its chain key: the links and every layer), refusing a statement other
/// than the expected one (`tokens`, or `text` by `model`'s tokenizer; `positions`; `layers`)
/// before verifying; returns what it accepted as a dict (`zkmha.Verified` wraps it).
#[pyfunction]
#[pyo3(signature = (key_path, proof_path, *, tokens=None, text=None, model=None, positions=None, layers=None))]
#[allow(clippy::too_many_arguments)]
fn verify<'py>(
    py: Python<'py>,
    key_path: PathBuf,
    proof_path: PathBuf,
    tokens: Option<Vec<u64>>,
    text: Option<String>,
    model: Option<PathBuf>,
    positions: Option<Vec<u64>>,
    layers: Option<(u64, u64)>,
) -> PyResult<Bound<'py, PyDict>> {
    // Expecting nothing by mistake is refused: every combination but these says what it means.
    let tokens = match (tokens, text, model) {
        (None, None, None) => ExpectedTokens::Nothing,
        (Some(ids), None, None) => ExpectedTokens::Ids(ids),
        (None, Some(text), Some(model)) => ExpectedTokens::Text(text, model),
        _ => {
            return Err(UsageError::new_err(
                "pass tokens=, or text= with model= (the tokenizer), or neither: not another combination",
            ));
        }
    };
    let verified = py
        .detach(|| -> zkmha_api::Result<_> {
            let tokens = match tokens {
                ExpectedTokens::Nothing => None,
                ExpectedTokens::Ids(ids) => Some(ids),
                ExpectedTokens::Text(text, model) => Some(zkmha_api::verified::text_tokens(&model, &text)?),
            };
            let expected = zkmha_api::Expected { tokens, positions, layers: layers.map(|(a, b)| a..b) };
            zkmha_api::verified::verify_files(&key_path, &proof_path, &expected)
        })
        .raise()?;
    verified_dict(py, verified)
}

/// The token ids a Python caller expects: none, ids, or a text with the model whose tokenizer
/// reads it.
enum ExpectedTokens {
    Nothing,
    Ids(Vec<u64>),
    Text(String, PathBuf),
}

/// The chain's proven output as an array: the logits (a chain with a head), else the last
/// layer's output.
fn chain_output<'py>(
    py: Python<'py>,
    proved: model_chain::ProvedChain,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    match proved.logits {
        Some(l) => to_array(py, l.positions.len(), l.vocabulary, l.values),
        None => to_array(py, proved.tokens, proved.model_width, proved.output),
    }
}

fn logit_positions(all_positions: bool) -> model_chain::LogitPositions {
    if all_positions { model_chain::LogitPositions::All } else { model_chain::LogitPositions::Last }
}

/// One input of `tokens`, `text` or a float64 hidden state `input`.
fn one_input(
    tokens: Option<Vec<usize>>,
    text: Option<String>,
    input: Option<PyReadonlyArray2<'_, f64>>,
) -> PyResult<ModelInput> {
    match (tokens, text, input) {
        (Some(ids), None, None) => Ok(ModelInput::Tokens(ids)),
        (None, Some(text), None) => Ok(ModelInput::Text(text)),
        (None, None, Some(array)) => {
            let array = array.as_array();
            Ok(ModelInput::HiddenState { values: array.iter().copied().collect(), columns: array.ncols() })
        }
        _ => Err(UsageError::new_err("pass the input as exactly one of tokens, text or input")),
    }
}

/// A chain's prover with its model loaded once (`zkmha_api::chain_tasks::ChainProver`): the
/// chain key at `key_path` (with its secret), the key's layers of the model file. Proves inputs
/// here (`prove_batch`) or in parts: a package per layer, a plan per input, a task per layer.
#[pyclass(module = "zkmha._native", frozen)]
struct ChainProver {
    inner: chain_tasks::ChainProver,
    /// The files it read, which no proof may replace.
    model_path: PathBuf,
    key_path: PathBuf,
}

#[pymethods]
impl ChainProver {
    #[new]
    #[pyo3(signature = (model_path, key_path, *, secret_path=None, family=None, heads=None, mask=None, transparent=false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        model_path: PathBuf,
        key_path: PathBuf,
        secret_path: Option<PathBuf>,
        family: Option<&str>,
        heads: Option<usize>,
        mask: Option<&str>,
        transparent: bool,
    ) -> PyResult<Self> {
        let options = model_options(0, family, heads, mask)?;
        let inner = py
            .detach(|| {
                let prover =
                    chain_tasks::ChainProver::open(&model_path, &key_path, secret_path.as_deref(), &options)?;
                if let Some(first) = prover.key().layers.first() {
                    model_files::check_key_mode(&key_path, first.weight_commitments, transparent)?;
                }
                Ok::<_, zkmha_api::Error>(prover)
            })
            .raise()?;
        Ok(Self { inner, model_path, key_path })
    }

    /// The number of layers (packages; jobs per input).
    #[getter]
    fn layers(&self) -> usize {
        self.inner.layers()
    }

    /// The model's index of the chain's first layer.
    #[getter]
    fn first_layer(&self) -> u64 {
        self.inner.key().first_layer
    }

    /// Whether the proofs are zero-knowledge (a hiding key).
    #[getter]
    fn zero_knowledge(&self) -> bool {
        self.inner.zero_knowledge()
    }

    /// How many inputs of `tokens` tokens to prove at once on this machine.
    fn batch_jobs(&self, tokens: usize) -> usize {
        self.inner.batch_jobs(tokens)
    }

    /// Layer `layer`'s package (counted from the chain's first layer): its key, its weights'
    /// blinds and its integer weights — what a worker needs, besides a job.
    fn package<'py>(&self, py: Python<'py>, layer: usize) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = py.detach(|| self.inner.package(layer)).raise()?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// The plan of one input: its forward pass run and its boundaries committed.
    #[pyo3(signature = (*, tokens=None, text=None, input=None, all_positions=false))]
    fn plan(
        &self,
        py: Python<'_>,
        tokens: Option<Vec<usize>>,
        text: Option<String>,
        input: Option<PyReadonlyArray2<'_, f64>>,
        all_positions: bool,
    ) -> PyResult<ChainPlan> {
        let input = one_input(tokens, text, input)?;
        let plan = py.detach(|| self.inner.plan(&input, logit_positions(all_positions))).raise()?;
        Ok(ChainPlan { inner: std::sync::Mutex::new(Some(plan)) })
    }

    /// Proves every input (`tokens`: token id lists, or `texts`) here, `jobs` at a time on
    /// `threads` threads, writes input i's proof to `proof_paths[i]` and returns each input's
    /// proven output; the first failure raises (after every input was tried).
    #[pyo3(signature = (proof_paths, *, tokens=None, texts=None, all_positions=false, jobs=None, threads=None))]
    #[allow(clippy::too_many_arguments)]
    fn prove_batch<'py>(
        &self,
        py: Python<'py>,
        proof_paths: Vec<PathBuf>,
        tokens: Option<Vec<Vec<usize>>>,
        texts: Option<Vec<String>>,
        all_positions: bool,
        jobs: Option<usize>,
        threads: Option<usize>,
    ) -> PyResult<Vec<Bound<'py, PyArray2<f64>>>> {
        let inputs: Vec<ModelInput> = match (tokens, texts) {
            (Some(ids), None) => ids.into_iter().map(ModelInput::Tokens).collect(),
            (None, Some(texts)) => texts.into_iter().map(ModelInput::Text).collect(),
            _ => return Err(UsageError::new_err("pass the inputs as exactly one of tokens or texts")),
        };
        if inputs.len() != proof_paths.len() {
            return Err(UsageError::new_err(format!(
                "{} inputs but {} proof paths: one proof file per input",
                inputs.len(),
                proof_paths.len()
            )));
        }
        // Two inputs' proofs never land on one file, nor on a file the prover read.
        let names: Vec<String> = (0..proof_paths.len()).map(|i| format!("proof_paths[{i}]")).collect();
        let writes: Vec<(&str, &Path)> =
            names.iter().map(String::as_str).zip(proof_paths.iter().map(PathBuf::as_path)).collect();
        zkmha_api::files::check_distinct_files(
            &[("model_path", self.model_path.as_path()), ("key_path", self.key_path.as_path())],
            &writes,
        )
        .raise()?;
        let longest = inputs
            .iter()
            .map(|i| match i {
                ModelInput::Tokens(ids) => ids.len(),
                _ => 512,
            })
            .max()
            .unwrap_or(1);
        let jobs = jobs.unwrap_or_else(|| self.inner.batch_jobs(longest));
        let threads = threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from));
        let results = py.detach(|| {
            let proved = self.inner.prove_batch(&inputs, logit_positions(all_positions), jobs, threads);
            proved
                .into_iter()
                .zip(&proof_paths)
                .map(|(result, path)| {
                    let proved = result?;
                    proved.proof.write(path)?;
                    Ok(proved)
                })
                .collect::<Vec<zkmha_api::Result<_>>>()
        });
        let mut outputs = Vec::with_capacity(results.len());
        for result in results {
            outputs.push(chain_output(py, result.raise()?)?);
        }
        Ok(outputs)
    }
}

/// One input's chain in progress: its jobs (one per layer), then its ends, then the assembled
/// proof.
#[pyclass(module = "zkmha._native", frozen)]
struct ChainPlan {
    inner: std::sync::Mutex<Option<chain_tasks::ChainPlan>>,
}

impl ChainPlan {
    fn with<T>(&self, f: impl FnOnce(&mut chain_tasks::ChainPlan) -> zkmha_api::Result<T>) -> PyResult<T> {
        let mut guard =
            self.inner.lock().map_err(|_| UsageError::new_err("the plan was poisoned by a panic"))?;
        let plan = guard.as_mut().ok_or_else(|| UsageError::new_err("the plan was assembled already"))?;
        f(plan).raise()
    }
}

#[pymethods]
impl ChainPlan {
    /// The input's tokens.
    #[getter]
    fn tokens(&self) -> PyResult<usize> {
        self.with(|plan| Ok(plan.tokens()))
    }

    /// Each layer's job, in the chain's order.
    fn jobs<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let jobs = py.detach(|| self.with(|plan| plan.jobs()))?;
        Ok(jobs.iter().map(|job| PyBytes::new(py, job)).collect())
    }

    /// Proves the embedding and the head (where the chain has them) and measures the forward
    /// pass: the coordinator's work while the workers prove the layers.
    fn prove_ends(&self, py: Python<'_>, prover: &ChainProver) -> PyResult<()> {
        py.detach(|| self.with(|plan| plan.prove_ends(&prover.inner)))
    }

    /// The chain's proof from every layer's link, in order, verified against the key and
    /// written to `proof_path`; returns the proven output (the logits with a head).
    fn assemble<'py>(
        &self,
        py: Python<'py>,
        prover: &ChainProver,
        links: Vec<Vec<u8>>,
        proof_path: PathBuf,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let plan = self
            .inner
            .lock()
            .map_err(|_| UsageError::new_err("the plan was poisoned by a panic"))?
            .take()
            .ok_or_else(|| UsageError::new_err("the plan was assembled already"))?;
        let proved = py
            .detach(|| -> zkmha_api::Result<_> {
                let proved = plan.assemble(&prover.inner, &links)?;
                proved.proof.write(&proof_path)?;
                Ok(proved)
            })
            .raise()?;
        chain_output(py, proved)
    }
}

/// Proves one layer of a chain from its package and one input's job, on `threads` threads
/// (default: the machine's); returns the link for `ChainPlan.assemble`.
#[pyfunction]
#[pyo3(signature = (package, job, *, threads=None))]
fn prove_layer_task<'py>(
    py: Python<'py>,
    package: Vec<u8>,
    job: Vec<u8>,
    threads: Option<usize>,
) -> PyResult<Bound<'py, PyBytes>> {
    let link = py.detach(|| -> zkmha_api::Result<Vec<u8>> {
        match threads {
            Some(threads) => {
                let pool =
                    rayon::ThreadPoolBuilder::new().num_threads(threads.max(1)).build().map_err(|e| {
                        zkmha_api::Error::Task { reason: format!("no thread pool of {threads} threads: {e}") }
                    })?;
                pool.install(|| chain_tasks::prove_layer_task(&package, &job))
            }
            None => chain_tasks::prove_layer_task(&package, &job),
        }
    });
    Ok(PyBytes::new(py, &link.raise()?))
}

/// The hidden state entering layer `layer` for `tokens` (or `text`), computed in float64
/// through the layers before it — not proven — as `zkmha hidden-state` writes it: a deeper
/// layer's `input` for `prove` (float64, tokens × d_model).
#[pyfunction]
#[pyo3(signature = (model_path, *, tokens=None, text=None, layer=0, family=None, heads=None))]
fn hidden_state<'py>(
    py: Python<'py>,
    model_path: PathBuf,
    tokens: Option<Vec<usize>>,
    text: Option<String>,
    layer: usize,
    family: Option<&str>,
    heads: Option<usize>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let options = model_options(layer, family, heads, None)?;
    let (rows, columns, values) = py
        .detach(|| -> zkmha_api::Result<Option<_>> {
            let model = Model::open(&model_path, &options)?;
            let ids = match (tokens, text) {
                (Some(ids), None) => ids,
                (None, Some(text)) => model.file().tokenizer()?.encode(&text)?,
                _ => return Ok(None),
            };
            let values = model.float_hidden_state(&ids)?;
            Ok(Some((ids.len(), model.model_width(), values)))
        })
        .raise()?
        .ok_or_else(|| UsageError::new_err("pass the tokens as exactly one of tokens or text"))?;
    to_array(py, rows, columns, values)
}

/// The error for an attention layer whose output is not integers.
fn no_integer_output() -> PyErr {
    UsageError::new_err(
        "the proven output is not a matrix of integers (linear attention with a causal or sliding mask gives masked scores the field's mask value): use softmax=\"exp\" or mask=\"none\"",
    )
}

/// The integer matrix `array` as row-major values, after checking its width.
fn matrix_values(
    array: &PyReadonlyArray2<'_, i64>,
    name: &str,
    rows: usize,
    columns: usize,
) -> PyResult<Vec<i64>> {
    let view = array.as_array();
    if view.dim() != (rows, columns) {
        return Err(UsageError::new_err(format!(
            "{name} has shape {:?}; with {rows} tokens and these heads it must be ({rows}, {columns})",
            view.dim()
        )));
    }
    Ok(view.iter().copied().collect())
}

/// Proves an attention layer of its own on the integer matrices `queries`, `keys` (tokens ×
/// heads·head_dim) and `values` (tokens × heads·value_head_dim), committed by the prover;
/// writes the proof to `proof_path` and returns the proven output O (int64, tokens ×
/// heads·value_head_dim).
#[pyfunction]
#[pyo3(signature = (queries, keys, values, heads, proof_path, *, mask="none", zero_knowledge=true, softmax="exp", score_scale=None, max_memory=None))]
#[allow(clippy::too_many_arguments)]
fn prove_attention<'py>(
    py: Python<'py>,
    queries: PyReadonlyArray2<'py, i64>,
    keys: PyReadonlyArray2<'py, i64>,
    values: PyReadonlyArray2<'py, i64>,
    heads: usize,
    proof_path: PathBuf,
    mask: &str,
    zero_knowledge: bool,
    softmax: &str,
    score_scale: Option<f64>,
    max_memory: Option<u64>,
) -> PyResult<Bound<'py, PyArray2<i64>>> {
    let mask = zkmha_api::parse_mask(mask).map_err(UsageError::new_err)?;
    let (rows, width) = queries.as_array().dim();
    let value_width = values.as_array().ncols();
    if heads == 0 || !width.is_multiple_of(heads) || !value_width.is_multiple_of(heads) {
        return Err(UsageError::new_err(format!(
            "heads = {heads} must divide the widths of queries ({width}) and values ({value_width})"
        )));
    }
    let shape = AttentionShape::new(rows, heads, width / heads, value_width / heads)
        .map_err(|e| BadInput::new_err(e.to_string()))?;
    // Refused in one sentence rather than killed by the system.
    zkmha_api::resources::check_layer_memory(&shape, max_memory).raise()?;
    let inputs = AttentionInputs {
        queries: matrix_values(&queries, "queries", rows, width)?,
        keys: matrix_values(&keys, "keys", rows, width)?,
        values: matrix_values(&values, "values", rows, value_width)?,
    };
    let softmax = match (softmax, score_scale) {
        ("exp", scale) => attention_layer::exponential_softmax(&shape, scale).raise()?,
        ("linear", None) => SoftmaxMode::Identity,
        ("linear", Some(_)) => {
            return Err(UsageError::new_err(
                "score_scale sets the exponential softmax: leave it out with softmax=\"linear\"",
            ));
        }
        (other, _) => {
            return Err(UsageError::new_err(format!("unknown softmax '{other}': use exp or linear")));
        }
    };
    if softmax == SoftmaxMode::Identity && mask == zkmha_api::MaskKind::Causal {
        return Err(no_integer_output());
    }
    let hiding = if zero_knowledge { Hiding::ZeroKnowledge } else { Hiding::Plain };
    let output = py
        .detach(|| -> zkmha_api::Result<_> {
            let proved = attention_layer::prove_attention(&shape, mask, softmax, &inputs, hiding)?;
            zkmha_api::files::write_file(&proof_path, &proved.encoded.bytes)?;
            Ok(proved.output)
        })
        .raise()?
        .ok_or_else(no_integer_output)?;
    Ok(Array2::from_shape_vec((rows, value_width), output)
        .map_err(|e| BadInput::new_err(e.to_string()))?
        .into_pyarray(py))
}

/// The time (seconds on the measured 2-core machine) and peak memory (bytes) estimated for
/// proving an attention layer of this shape, before any work.
#[pyfunction]
#[pyo3(signature = (tokens, heads, head_dim, value_head_dim, zero_knowledge))]
fn estimate_attention(
    tokens: usize,
    heads: usize,
    head_dim: usize,
    value_head_dim: usize,
    zero_knowledge: bool,
) -> PyResult<(u64, f64)> {
    let shape = AttentionShape::new(tokens, heads, head_dim, value_head_dim)
        .map_err(|e| BadInput::new_err(e.to_string()))?;
    let hiding = if zero_knowledge { Hiding::ZeroKnowledge } else { Hiding::Plain };
    let estimate = zkmha_api::resources::estimate_layer(&shape, hiding);
    Ok((estimate.memory_bytes, estimate.seconds))
}

/// Verifies the attention-layer proof at `proof_path` with nothing but itself; returns the
/// proven output O (int64). The proof's softmax must be `softmax` (as `zkmha verify`
/// prints it: `linear` or `multiplier=…,shift=…,…`), by default the one `prove_attention`
/// uses for the shape; `mask`, `heads` and `head_dim`, where given, must be the proof's.
#[pyfunction]
#[pyo3(signature = (proof_path, *, softmax=None, mask=None, heads=None, head_dim=None))]
fn verify_attention<'py>(
    py: Python<'py>,
    proof_path: PathBuf,
    softmax: Option<&str>,
    mask: Option<&str>,
    heads: Option<usize>,
    head_dim: Option<usize>,
) -> PyResult<Bound<'py, PyDict>> {
    let expected = Expected {
        softmax: softmax.map(zkmha_api::parse_softmax_spec).transpose().map_err(UsageError::new_err)?,
        mask: mask.map(zkmha_api::parse_mask).transpose().map_err(UsageError::new_err)?,
        heads,
        head_dim,
    };
    let verified = py
        .detach(|| -> zkmha_api::Result<_> {
            let file = LayerProof::read(&proof_path)?;
            attention_layer::verify_attention(&file, &expected)
        })
        .raise()?;
    verified_dict(py, verified.verified)
}

/// What a file zkmha writes holds (any kind), as `zkmha inspect --json` prints it; nothing is
/// verified.
#[pyfunction]
fn inspect(py: Python<'_>, path: PathBuf) -> PyResult<String> {
    py.detach(|| zkmha_api::inspect::read(Path::new(&path)).map(|file| file.to_json().to_string())).raise()
}

/// Writes a tiny synthetic BERT-style model (`d_model` 16, 4 heads, an MLP of 32, a vocabulary of 40) to
/// `directory/model.safetensors` with its config.json; returns the model's path.
#[pyfunction]
fn write_example_model(directory: PathBuf, seed: u32) -> PyResult<String> {
    zkmha_api::example_model::write_bert(&directory, seed).map(|path| path.display().to_string()).raise()
}

/// Writes a tiny synthetic Llama-style model with `layers` whole layers (`d_model` 16, 4
/// query heads sharing 2 key/value heads, a gated MLP, a vocabulary of 40) to
/// `directory/model.safetensors` with its config.json; returns the model's path.
#[pyfunction]
fn write_example_llama(directory: PathBuf, seed: u32, layers: usize) -> PyResult<String> {
    zkmha_api::example_model::write_llama(&directory, seed, layers)
        .map(|path| path.display().to_string())
        .raise()
}

/// The native module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_function(wrap_pyfunction!(commit_model, m)?)?;
    m.add_function(wrap_pyfunction!(prove, m)?)?;
    m.add_function(wrap_pyfunction!(verify, m)?)?;
    m.add_function(wrap_pyfunction!(inspect, m)?)?;
    m.add_function(wrap_pyfunction!(prove_attention, m)?)?;
    m.add_function(wrap_pyfunction!(verify_attention, m)?)?;
    m.add_function(wrap_pyfunction!(estimate_attention, m)?)?;
    m.add_function(wrap_pyfunction!(hidden_state, m)?)?;
    m.add_function(wrap_pyfunction!(write_example_model, m)?)?;
    m.add_function(wrap_pyfunction!(write_example_llama, m)?)?;
    m.add_function(wrap_pyfunction!(prove_layer_task, m)?)?;
    m.add_class::<ChainProver>()?;
    m.add_class::<ChainPlan>()?;
    m.add("ZkmhaError", py.get_type::<ZkmhaError>())?;
    m.add("InvalidProof", py.get_type::<InvalidProof>())?;
    m.add("BadInput", py.get_type::<BadInput>())?;
    m.add("UnsupportedModel", py.get_type::<UnsupportedModel>())?;
    m.add("UsageError", py.get_type::<UsageError>())?;
    m.add("OutOfResources", py.get_type::<OutOfResources>())?;
    m.add("RefusedProof", py.get_type::<RefusedProof>())?;
    m.add("FidelityWarning", py.get_type::<FidelityWarning>())?;
    Ok(())
}
