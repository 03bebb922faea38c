// The type a stagewatch dashboard must have: @grafana/schema's Dashboard, with each panel's
// options and field config checked against that panel plugin's own schema, and every query
// and annotation target against the Prometheus data query's schema. Checked by check.py.
import type * as S from "@grafana/schema";
import type { PrometheusDataQuery } from "@grafana/schema/dist/esm/raw/composable/prometheus/dataquery/x/PrometheusDataQuery_types.gen";
import type * as BarChart from "@grafana/schema/dist/esm/raw/composable/barchart/panelcfg/x/BarChartPanelCfg_types.gen";
import type * as Heatmap from "@grafana/schema/dist/esm/raw/composable/heatmap/panelcfg/x/HeatmapPanelCfg_types.gen";
import type * as Stat from "@grafana/schema/dist/esm/raw/composable/stat/panelcfg/x/StatPanelCfg_types.gen";
import type * as StateTimeline from "@grafana/schema/dist/esm/raw/composable/statetimeline/panelcfg/x/StateTimelinePanelCfg_types.gen";
import type * as Table from "@grafana/schema/dist/esm/raw/composable/table/panelcfg/x/TablePanelCfg_types.gen";
import type * as TimeSeries from "@grafana/schema/dist/esm/raw/composable/timeseries/panelcfg/x/TimeSeriesPanelCfg_types.gen";

// The one liberty taken: JSON spells a string enum member by its value ("absolute"), which
// TypeScript would only accept written as ThresholdsMode.Absolute. Everything else is as
// strict as the schema: required keys, value types, and no keys it does not define.
type Json<T> =
  T extends string ? `${T}` :
  T extends number | boolean | null | undefined ? T :
  T extends Array<infer U> ? Array<Json<U>> :
  T extends object ? { [K in keyof T]: Json<T[K]> } :
  T;

type Query = Json<PrometheusDataQuery>;

type FieldConfigSource<Custom> = Omit<Json<S.FieldConfigSource>, "defaults"> & {
  defaults: Omit<Json<S.FieldConfig>, "custom"> & { custom?: Json<Custom> };
};

type PanelOf<Type extends string, Options, Custom> =
  Omit<Json<S.Panel>, "type" | "options" | "fieldConfig" | "targets"> & {
    type: Type;
    options: Json<Options>;
    fieldConfig: FieldConfigSource<Custom>;
    targets: Query[];
  };

type Panel =
  | PanelOf<"timeseries", TimeSeries.Options, TimeSeries.FieldConfig>
  | PanelOf<"stat", Stat.Options, Record<string, never>>
  | PanelOf<"table", Table.Options, Table.FieldConfig>
  | PanelOf<"heatmap", Heatmap.Options, Heatmap.FieldConfig>
  | PanelOf<"barchart", BarChart.Options, BarChart.FieldConfig>
  | PanelOf<"state-timeline", StateTimeline.Options, StateTimeline.FieldConfig>
  | Json<S.RowPanel>;

// Grafana's built-in "Annotations & Alerts" entry.
type BuiltInAnnotation = Omit<Json<S.AnnotationQuery>, "builtIn" | "target"> & { builtIn: 1 };

// A Prometheus annotation: its query in target. titleFormat, textFormat, tagKeys and
// useValueForTime are the Prometheus data source's annotation options, which Grafana keeps
// beside target; @grafana/schema does not list any data source's annotation options.
type PrometheusAnnotation = Omit<Json<S.AnnotationQuery>, "builtIn" | "target"> & {
  builtIn?: 0;
  target: Query;
  titleFormat?: string;
  textFormat?: string;
  tagKeys?: string;
  useValueForTime?: boolean;
};

export type StagewatchDashboard =
  Omit<Json<S.Dashboard>, "panels" | "annotations" | "templating"> & {
    annotations: { list: Array<BuiltInAnnotation | PrometheusAnnotation> };
    panels: Panel[];
    templating: { list: Array<Json<S.VariableModel>> };
  };
