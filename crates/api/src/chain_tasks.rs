//! A chain's proof in independent parts: for a cluster (the Python package's
//! `zkmha.distributed`, one Ray task per layer), and for many inputs on one loaded model
//! ([`ChainProver::prove_batch`], `zkmha prove --tokens-file`).
//!
//! ```text
//! ChainProver::open     the chain key, its secret and the model's layers, checked against the key
//!                       once; every layer's integer weights quantized once
//! ChainProver::package  layer ℓ's package: its key, its weights' blinds, its integer weights —
//!                       what a worker holds, shared by every input's task of that layer
//! ChainProver::plan     one input: the quantized forward pass H_a → … → H_b, the boundaries
//!                       committed → one job per layer (the two committed boundaries it joins)
//! prove_layer_task      (package, job) → the layer's link (statement, proof), on any worker
//! ChainPlan::prove_ends the embedding's and the head's proofs, the accuracy (the coordinator,
//!                       while the workers prove the layers)
//! ChainPlan::assemble   the links in the key's order and the ends → the chain's proof, verified
//!                       against the key before it is returned
//! ```
//!
//! Nothing here is trusted by a verifier: the assembled proof is the chain proof
//! [`crate::model_chain::verify_chain`] checks, and a link proven from another boundary, other
//! weights or another input's plan breaks the chain where the commitments meet. A job holds the
//! boundaries' blinds (the prover's secret, as the model secret is): packages and jobs travel
//! only inside the prover's own cluster. A task's link holds only what the proof file holds.
//!
//! The wire format (postcard; the commitments, blinds and proofs in arkworks' canonical
//! encoding inside it) is versioned: a package, job or link of another version, another
//! mode, another layer or another chain is refused with [`Error::Task`].

use crate::error::{Error, Result};
use crate::model_chain::{
    ChainKey, ChainMode, ChainParts, ChainSecret, LayerBlinds, LogitPositions, PlanOf, PreparedLayers,
    ProvedChain, prepare_layers, prove_link,
};
use crate::model_layer::{Model, ModelInput, ModelOptions};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::{Duration, Instant};
use zkmha_attention::block::Boundary;
use zkmha_attention::layer_chain::ChainLink;
use zkmha_attention::mode::{Plain, Zk};
use zkmha_attention::model_layer::{ModelStatement, ModelWeights};
use zkmha_attention::verifier_key::{ModelSecret, ModelVerifierKey, WeightCommitments};
use zkmha_pcs::HyraxCommitment;

/// The version of packages, jobs and links; another is refused.
const TASK_FORMAT: u32 = 1;

/// Each part's kind, its second field: a job where a link is expected is refused by name.
const PACKAGE: u8 = 1;
const JOB: u8 = 2;
const LINK: u8 = 3;

/// A chain's prover with its model loaded: the key, the secret, the layers' models and their
/// integer weights, checked against the key once for every input it proves.
pub struct ChainProver {
    key: ChainKey,
    secret: Option<ChainSecret>,
    models: Vec<Model>,
    prepared: PreparedLayers,
    /// [`Self::chain_digest`], computed once.
    digest: [u8; 32],
}

impl std::fmt::Debug for ChainProver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChainProver")
            .field("first_layer", &self.key.first_layer)
            .field("layers", &self.key.layers.len())
            .field("zero_knowledge", &self.zero_knowledge())
            .finish_non_exhaustive()
    }
}

impl ChainProver {
    /// The prover of `key`'s layers of `models` (with `secret` for a hiding key).
    ///
    /// # Errors
    /// As [`crate::model_chain::prove_chain`] before it proves: models that are not the key's
    /// layers, a missing or foreign secret, weights that are not the key's kind of model.
    pub fn new(key: ChainKey, secret: Option<ChainSecret>, models: Vec<Model>) -> Result<Self> {
        let prepared = prepare_layers(&key, secret.as_ref(), &models)?;
        let digest = key_digest(&key);
        Ok(Self { key, secret, models, prepared, digest })
    }

    /// Reads the chain key at `key_path` (and, for a hiding key, its secret: `secret_path`, by
    /// default beside the key) and opens the key's layers of the model file `model_path`.
    ///
    /// # Errors
    /// As [`crate::model_chain::read_chain_key`], [`crate::model_chain::read_chain_secret_for`],
    /// [`crate::model_chain::open_layers`] and [`Self::new`].
    pub fn open(
        model_path: &Path,
        key_path: &Path,
        secret_path: Option<&Path>,
        options: &ModelOptions,
    ) -> Result<Self> {
        let key = crate::model_chain::read_chain_key(key_path)?;
        let secret = match key.layers.first().map(|k| k.weight_commitments) {
            Some(WeightCommitments::Hiding) => {
                Some(crate::model_chain::read_chain_secret_for(key_path, secret_path)?)
            }
            _ => None,
        };
        let range = key.layer_range();
        let layers = range.start as usize..range.end as usize;
        let models = crate::model_chain::open_layers(model_path, options, layers)?;
        Self::new(key, secret, models)
    }

    /// The chain's key.
    pub fn key(&self) -> &ChainKey {
        &self.key
    }

    /// The layers' models.
    pub fn models(&self) -> &[Model] {
        &self.models
    }

    /// The number of layers (of packages, and of jobs per input).
    pub fn layers(&self) -> usize {
        self.key.layers.len()
    }

    /// Whether the proofs are zero-knowledge (a hiding key).
    pub fn zero_knowledge(&self) -> bool {
        matches!(self.prepared.blinds, LayerBlinds::Hiding(_))
    }

    fn parts(&self) -> ChainParts<'_> {
        ChainParts {
            key: &self.key,
            secret: self.secret.as_ref(),
            models: &self.models,
            prepared: &self.prepared,
        }
    }

    /// Layer `l`'s package (`l` counts from the chain's first layer): its key, the blinds of
    /// its weight commitments and its integer weights, for [`prove_layer_task`].
    ///
    /// # Errors
    /// [`Error::Task`] for a layer the chain does not have; [`Error::Encode`].
    pub fn package(&self, l: usize) -> Result<Vec<u8>> {
        let key = self.key.layers.get(l).ok_or_else(|| task(format!("the chain has no layer {l}")))?;
        let weights =
            self.prepared.weights.get(l).ok_or_else(|| task(format!("the chain has no layer {l}")))?;
        let secret = self.secret.as_ref().and_then(|s| s.layers.get(l));
        let wire = PackageWire {
            format: TASK_FORMAT,
            kind: PACKAGE,
            chain: self.chain_digest(),
            layer: l as u64,
            key: canonical(key)?,
            secret: secret.map(canonical).transpose()?,
            weights: weights.clone(),
        };
        to_wire(&wire)
    }

    /// Runs the forward pass on `input` and commits its boundaries: the chain's plan, whose
    /// [`ChainPlan::jobs`] the layer tasks prove.
    ///
    /// # Errors
    /// As [`crate::model_chain::forward_pass`]; too many logits for one proof.
    pub fn plan(&self, input: &ModelInput, positions: LogitPositions) -> Result<ChainPlan> {
        let parts = self.parts();
        let kind = match &self.prepared.blinds {
            LayerBlinds::Hiding(_) => {
                PlanKind::ZeroKnowledge(crate::model_chain::plan_chain::<Zk>(&parts, input, positions)?)
            }
            LayerBlinds::Binding => {
                PlanKind::Plain(crate::model_chain::plan_chain::<Plain>(&parts, input, positions)?)
            }
        };
        Ok(ChainPlan { chain: self.chain_digest(), kind })
    }

    /// Proves `input` here, every layer one after another (what
    /// [`crate::model_chain::prove_chain_with`] does, with the model loaded once).
    ///
    /// # Errors
    /// As [`crate::model_chain::prove_chain_with`].
    pub fn prove(&self, input: &ModelInput, positions: LogitPositions) -> Result<ProvedChain> {
        crate::model_chain::prove_with_parts(&self.parts(), input, positions, &mut |_, _| {})
    }

    /// Proves every input of `inputs` on this loaded model, `jobs` inputs at a time (each on
    /// its share of the threads: `threads / jobs`, at least one), and returns each input's
    /// result in order; an input that fails does not stop the others.
    ///
    /// ```
    /// use zkmha_api::chain_tasks::ChainProver;
    /// use zkmha_api::model_chain::{LogitPositions, commit_chain, open_layers, verify_chain};
    /// use zkmha_api::{ModelInput, WeightCommitments};
    /// let dir = std::env::temp_dir().join(format!("zkmha-doc-batch-{}", std::process::id()));
    /// let path = zkmha_api::example_model::write_llama(&dir, 7, 2)?;
    /// let models = open_layers(&path, &Default::default(), 0..2)?;
    /// let committed = commit_chain(&models, WeightCommitments::Binding, &mut |_, _| {})?;
    /// let prover = ChainProver::new(committed.key.clone(), None, models)?;
    /// let inputs = [ModelInput::Tokens(vec![1, 2, 3]), ModelInput::Tokens(vec![4, 5])];
    /// let proved = prover.prove_batch(&inputs, LogitPositions::Last, 2, 2);
    /// for result in proved {
    ///     verify_chain(&committed.key, &result?.proof)?;
    /// }
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn prove_batch(
        &self,
        inputs: &[ModelInput],
        positions: LogitPositions,
        jobs: usize,
        threads: usize,
    ) -> Vec<Result<ProvedChain>> {
        let results: Vec<std::sync::Mutex<Option<Result<ProvedChain>>>> =
            inputs.iter().map(|_| std::sync::Mutex::new(None)).collect();
        self.prove_batch_with(inputs, positions, jobs, threads, &|i, result| {
            if let Some(slot) = results.get(i)
                && let Ok(mut slot) = slot.lock()
            {
                *slot = Some(result);
            }
        });
        results
            .into_iter()
            .map(|slot| {
                slot.into_inner()
                    .ok()
                    .flatten()
                    .unwrap_or_else(|| Err(task("an input's prover stopped without a result".into())))
            })
            .collect()
    }

    /// [`Self::prove_batch`] handing each input's result to `done` (with its index) as soon as
    /// it is proven, from the thread that proved it: to write each proof while the others are
    /// proven, and hold none of them longer.
    pub fn prove_batch_with(
        &self,
        inputs: &[ModelInput],
        positions: LogitPositions,
        jobs: usize,
        threads: usize,
        done: &(dyn Fn(usize, Result<ProvedChain>) + Sync),
    ) {
        let jobs = jobs.clamp(1, inputs.len().max(1));
        let per_job = (threads / jobs).max(1);
        let next = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for _ in 0..jobs {
                scope.spawn(|| {
                    let pool = rayon::ThreadPoolBuilder::new().num_threads(per_job).build();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(input) = inputs.get(i) else { break };
                        let _span = tracing::info_span!("prove_input", input = i).entered();
                        // A panic while proving one input is that input's error, not the batch's.
                        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match &pool {
                            Ok(pool) => pool.install(|| self.prove(input, positions)),
                            Err(e) => Err(task(format!("no thread pool: {e}"))),
                        }))
                        .unwrap_or_else(|_| Err(task(format!("proving input {i} panicked"))));
                        done(i, result);
                    }
                });
            }
        });
    }

    /// How many inputs of up to `tokens` tokens [`Self::prove_batch`] should prove at once on
    /// this machine: one per core, as many as the machine's memory holds at the largest layer's
    /// estimated peak (at least one).
    pub fn batch_jobs(&self, tokens: usize) -> usize {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        let peak = self
            .key
            .layers
            .iter()
            .filter_map(|k| k.shape(tokens.max(1)).ok())
            .map(|shape| crate::resources::estimate_model_layer_memory(&shape))
            .max()
            .unwrap_or(1)
            .max(1);
        let fits = crate::resources::machine_memory().map_or(cores as u64, |memory| memory / peak);
        (fits.min(cores as u64) as usize).max(1)
    }

    /// A digest of the chain's key (its commitments, quantization and layers): packages, jobs
    /// and links carry it, so that parts of two chains are not mixed.
    fn chain_digest(&self) -> [u8; 32] {
        self.digest
    }
}

/// One input's chain in progress ([`ChainProver::plan`]): its committed boundaries, its jobs,
/// and (once proven) its ends.
pub struct ChainPlan {
    chain: [u8; 32],
    kind: PlanKind,
}

enum PlanKind {
    Plain(PlanOf<Plain>),
    ZeroKnowledge(PlanOf<Zk>),
}

impl std::fmt::Debug for ChainPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChainPlan").field("tokens", &self.tokens()).finish_non_exhaustive()
    }
}

impl ChainPlan {
    /// The input's tokens.
    pub fn tokens(&self) -> usize {
        match &self.kind {
            PlanKind::Plain(p) => p.forward.tokens,
            PlanKind::ZeroKnowledge(p) => p.forward.tokens,
        }
    }

    /// Each layer's job, in the chain's order: the two committed boundaries it joins.
    ///
    /// # Errors
    /// [`Error::Encode`] (not expected: encoding into memory).
    pub fn jobs(&self) -> Result<Vec<Vec<u8>>> {
        fn jobs_of<M: ChainMode>(chain: [u8; 32], plan: &PlanOf<M>, layers: usize) -> Result<Vec<Vec<u8>>> {
            (0..layers)
                .map(|l| {
                    let (input, output) = plan.ends_of(l)?;
                    to_wire(&JobWire {
                        format: TASK_FORMAT,
                        kind: JOB,
                        chain,
                        layer: l as u64,
                        zero_knowledge: M::HIDING,
                        tokens: plan.forward.tokens as u64,
                        input: BoundaryWire::of::<M>(input)?,
                        output: output.map(BoundaryWire::of::<M>).transpose()?,
                    })
                })
                .collect()
        }
        match &self.kind {
            PlanKind::Plain(p) => jobs_of(self.chain, p, p.forward.boundaries.len().saturating_sub(1)),
            PlanKind::ZeroKnowledge(p) => {
                jobs_of(self.chain, p, p.forward.boundaries.len().saturating_sub(1))
            }
        }
    }

    /// Proves the embedding and the head (where the chain has them) and measures the forward
    /// pass against float64; [`Self::assemble`] does it when this was not called.
    ///
    /// # Errors
    /// [`Error::Task`] for a prover of another chain; as the proofs.
    pub fn prove_ends(&mut self, prover: &ChainProver) -> Result<()> {
        self.check_prover(prover)?;
        let parts = prover.parts();
        match &mut self.kind {
            PlanKind::Plain(p) => p.prove_ends(&parts),
            PlanKind::ZeroKnowledge(p) => p.prove_ends(&parts),
        }
    }

    /// The chain's proof from every layer's link ([`prove_layer_task`]), in the chain's order,
    /// checked against the key.
    ///
    /// # Errors
    /// [`Error::Task`] for links of another chain, mode or count, or out of order;
    /// [`Error::InvalidProof`] for a chain that does not verify (a link proven from another
    /// plan's boundaries).
    pub fn assemble(self, prover: &ChainProver, links: &[Vec<u8>]) -> Result<ProvedChain> {
        fn links_of<M: ChainMode>(
            chain: [u8; 32],
            links: &[Vec<u8>],
        ) -> Result<Vec<(ChainLink<M>, Duration)>> {
            links.iter().enumerate().map(|(l, bytes)| decode_link::<M>(chain, l, bytes)).collect()
        }
        self.check_prover(prover)?;
        let parts = prover.parts();
        if links.len() != prover.layers() {
            return Err(task(format!("{} links for a chain of {} layers", links.len(), prover.layers())));
        }
        match self.kind {
            PlanKind::Plain(p) => p.assemble(&parts, links_of(self.chain, links)?),
            PlanKind::ZeroKnowledge(p) => p.assemble(&parts, links_of(self.chain, links)?),
        }
    }

    fn check_prover(&self, prover: &ChainProver) -> Result<()> {
        if prover.chain_digest() != self.chain {
            return Err(task("the plan is another chain's".into()));
        }
        Ok(())
    }
}

/// Proves one layer of a chain on any worker: `package` ([`ChainProver::package`]) and `job`
/// (one of [`ChainPlan::jobs`]) in, the layer's link out, for [`ChainPlan::assemble`]. Runs on
/// the caller's rayon pool (a worker's share of its machine: `pool.install`).
///
/// # Errors
/// [`Error::Task`] for a package and a job of another version, chain, layer or mode; the
/// layer's proof's errors.
pub fn prove_layer_task(package: &[u8], job: &[u8]) -> Result<Vec<u8>> {
    let package: PackageWire = from_wire(package, PACKAGE, "package")?;
    let job: JobWire = from_wire(job, JOB, "job")?;
    if package.chain != job.chain || package.layer != job.layer {
        return Err(task(format!(
            "the job of layer {} is not for the package of layer {} (or of another chain)",
            job.layer, package.layer
        )));
    }
    let key: ModelVerifierKey = from_canonical(&package.key, "the package's key")?;
    let secret: Option<ModelSecret> =
        package.secret.as_deref().map(|b| from_canonical(b, "the package's secret")).transpose()?;
    let start = Instant::now();
    let (zero_knowledge, link) = match (key.weight_commitments, secret, job.zero_knowledge) {
        (WeightCommitments::Hiding, Some(secret), true) => {
            let blinds =
                secret.blinds_for(&key).map_err(|_| task("the package's secret is not its key's".into()))?;
            (true, prove_job::<Zk>(&key, &package.weights, &blinds, &job)?)
        }
        (WeightCommitments::Binding, None, false) => {
            let blinds = vec![(); key.commitment.tables.len()];
            (false, prove_job::<Plain>(&key, &package.weights, &blinds, &job)?)
        }
        _ => return Err(task("the job's mode is not the package's".into())),
    };
    to_wire(&LinkWire {
        format: TASK_FORMAT,
        kind: LINK,
        chain: job.chain,
        layer: job.layer,
        zero_knowledge,
        seconds: start.elapsed().as_secs_f64(),
        link,
    })
}

fn prove_job<M: ChainMode>(
    key: &ModelVerifierKey,
    weights: &ModelWeights,
    blinds: &[M::Blinds],
    job: &JobWire,
) -> Result<Vec<u8>> {
    let tokens = usize::try_from(job.tokens).map_err(|_| task("the job's tokens".into()))?;
    let input = job.input.boundary::<M>()?;
    let output = job.output.as_ref().map(BoundaryWire::boundary::<M>).transpose()?;
    let mut rng = crate::model_layer::secure_rng("masks")?;
    let link = prove_link::<M>(key, weights, blinds, tokens, &input, output.as_ref(), &mut rng)?;
    canonical(&(&link.statement, &link.proof))
}

/// Decodes task `l`'s link: its version, chain, layer and mode checked, the proof decoded
/// within a layer's commitment-row budget and its statement within the stated limits.
fn decode_link<M: ChainMode>(chain: [u8; 32], l: usize, bytes: &[u8]) -> Result<(ChainLink<M>, Duration)> {
    let wire: LinkWire = from_wire(bytes, LINK, "link")?;
    if wire.chain != chain || wire.layer != l as u64 || wire.zero_knowledge != M::HIDING {
        return Err(task(format!(
            "link {l} is layer {}'s of {} chain in the {} mode",
            wire.layer,
            if wire.chain == chain { "this" } else { "another" },
            if wire.zero_knowledge { "zero-knowledge" } else { "plain" }
        )));
    }
    let (statement, proof) = zkmha_pcs::decode_with_row_budget(crate::model_files::MAX_DECODED_ROWS, || {
        from_canonical::<(ModelStatement, zkmha_attention::block::ModelBlockProof<M>)>(&wire.link, "a link")
    })?;
    statement
        .validate_without_weight_commitments()
        .map_err(|error| task(format!("link {l}'s statement: {error}")))?;
    // A time no duration holds (negative, not finite, past u64 seconds) is reported as zero.
    Ok((ChainLink { statement, proof }, Duration::try_from_secs_f64(wire.seconds).unwrap_or_default()))
}

/// A layer's package on the wire.
#[derive(Serialize, Deserialize)]
struct PackageWire {
    format: u32,
    kind: u8,
    chain: [u8; 32],
    layer: u64,
    /// The layer's [`ModelVerifierKey`], canonical.
    key: Vec<u8>,
    /// The layer's [`ModelSecret`], canonical (hiding keys).
    secret: Option<Vec<u8>>,
    weights: ModelWeights,
}

/// A layer's job on the wire.
#[derive(Serialize, Deserialize)]
struct JobWire {
    format: u32,
    kind: u8,
    chain: [u8; 32],
    layer: u64,
    zero_knowledge: bool,
    tokens: u64,
    input: BoundaryWire,
    output: Option<BoundaryWire>,
}

/// A committed boundary on the wire.
#[derive(Serialize, Deserialize)]
struct BoundaryWire {
    values: Vec<i64>,
    /// The [`HyraxCommitment`], canonical.
    commitment: Vec<u8>,
    /// The rows' blinds, canonical (zero knowledge).
    blinds: Option<Vec<u8>>,
}

impl BoundaryWire {
    fn of<M: ChainMode>(boundary: &Boundary<M::Blinds>) -> Result<Self> {
        Ok(Self {
            values: boundary.values.clone(),
            commitment: canonical(&boundary.commitment)?,
            blinds: M::blind_rows(&boundary.blinds).map(|rows| canonical(&rows)).transpose()?,
        })
    }

    fn boundary<M: ChainMode>(&self) -> Result<Boundary<M::Blinds>> {
        let commitment: HyraxCommitment = from_canonical(&self.commitment, "a boundary's commitment")?;
        let rows: Option<Vec<zkmha_field::Fr>> =
            self.blinds.as_deref().map(|b| from_canonical(b, "a boundary's blinds")).transpose()?;
        let blinds =
            M::from_rows(rows).ok_or_else(|| task("a boundary's blinds are not its mode's".into()))?;
        Ok(Boundary { values: self.values.clone(), commitment, blinds })
    }
}

/// A layer's link on the wire.
#[derive(Serialize, Deserialize)]
struct LinkWire {
    format: u32,
    kind: u8,
    chain: [u8; 32],
    layer: u64,
    zero_knowledge: bool,
    /// How long the layer's proof took.
    seconds: f64,
    /// `(ModelStatement, ModelBlockProof<M>)`, canonical, as a chain's proof file holds it.
    link: Vec<u8>,
}

/// The digest of a chain key's canonical encoding.
fn key_digest(key: &ChainKey) -> [u8; 32] {
    let mut hasher = blake3::Hasher::new();
    // Encoding into a hasher does not fail; were it to, the digest would still cover what was
    // written (parts of this key alone carry it).
    let _ = key.serialize_compressed(&mut HashWriter(&mut hasher));
    *hasher.finalize().as_bytes()
}

/// `std::io::Write` into a blake3 hasher.
struct HashWriter<'h>(&'h mut blake3::Hasher);

impl std::io::Write for HashWriter<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.update(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn task(reason: String) -> Error {
    Error::Task { reason }
}

fn canonical<T: CanonicalSerialize>(value: &T) -> Result<Vec<u8>> {
    let mut bytes = Vec::with_capacity(value.compressed_size());
    value.serialize_compressed(&mut bytes).map_err(|e| task(format!("encoding: {e}")))?;
    Ok(bytes)
}

fn from_canonical<T: CanonicalDeserialize>(bytes: &[u8], what: &str) -> Result<T> {
    let mut rest = bytes;
    let value =
        T::deserialize_compressed(&mut rest).map_err(|e| task(format!("{what} does not decode: {e}")))?;
    if !rest.is_empty() {
        return Err(task(format!("{what} has {} bytes after its end", rest.len())));
    }
    Ok(value)
}

fn to_wire<T: Serialize>(value: &T) -> Result<Vec<u8>> {
    postcard::to_allocvec(value).map_err(|e| task(format!("encoding: {e}")))
}

/// Decodes a `what` of this version and kind (its first two fields, `format` and `kind`, read
/// first), with nothing after it.
fn from_wire<'a, T: Deserialize<'a>>(bytes: &'a [u8], kind: u8, what: &str) -> Result<T> {
    let ((format, given), _): ((u32, u8), _) =
        postcard::take_from_bytes(bytes).map_err(|e| task(format!("a {what} that does not decode: {e}")))?;
    if format != TASK_FORMAT {
        return Err(task(format!("a {what} of format {format}; this version reads format {TASK_FORMAT}")));
    }
    if given != kind {
        let name = match given {
            PACKAGE => "package",
            JOB => "job",
            LINK => "link",
            _ => "part of no known kind",
        };
        return Err(task(format!("a {name} where a {what} is expected")));
    }
    let (value, rest) =
        postcard::take_from_bytes(bytes).map_err(|e| task(format!("a {what} that does not decode: {e}")))?;
    if !rest.is_empty() {
        return Err(task(format!("a {what} with {} bytes after its end", rest.len())));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
    use super::*;

    /// A link's reported time is the worker's word: one no `Duration` holds is reported as zero,
    /// not a panic (found by the review of 2026-11-29: `seconds = 1e30` panicked in assemble).
    #[test]
    fn a_link_with_a_time_no_duration_holds_assembles_with_zero() {
        let dir = std::env::temp_dir().join(format!("zkmha-tasks-unit-{}", std::process::id()));
        let path = crate::example_model::write_llama(&dir, 7, 1).unwrap();
        let models = crate::model_chain::open_layers(&path, &Default::default(), 0..1).unwrap();
        let committed =
            crate::model_chain::commit_chain(&models, WeightCommitments::Binding, &mut |_, _| {}).unwrap();
        let prover = ChainProver::new(committed.key, None, models).unwrap();
        for seconds in [1e30, f64::NAN, -1.0, f64::INFINITY] {
            let plan = prover.plan(&ModelInput::Tokens(vec![1, 2]), LogitPositions::Last).unwrap();
            let link = prove_layer_task(&prover.package(0).unwrap(), &plan.jobs().unwrap()[0]).unwrap();
            let mut wire: LinkWire = from_wire(&link, LINK, "link").unwrap();
            wire.seconds = seconds;
            let proved = plan.assemble(&prover, &[to_wire(&wire).unwrap()]).unwrap();
            assert_eq!(proved.layer_times, vec![Duration::ZERO]);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
